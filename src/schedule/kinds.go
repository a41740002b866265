package schedule

import "github.com/hobbs-agent/hobbs/src/errs"

// The kinds of advice schedule's errors and results carry; cmd/hobbs words
// them (hints_schedule.go). Facts: name (a playbook), begin and end (the
// crontab block's markers, quoted), near (the nearest intervals, joined).
const (
	NoUserManager errs.Kind = "schedule.no-user-manager"
	NoCronDaemon  errs.Kind = "schedule.no-cron-daemon"
	NoCrontab     errs.Kind = "schedule.no-crontab"
	DamagedBlock  errs.Kind = "schedule.damaged-block"
	UnitExists    errs.Kind = "schedule.unit-exists"
	BadCalendar   errs.Kind = "schedule.bad-calendar"
	CronCalendar  errs.Kind = "schedule.cron-calendar"
	CronInterval  errs.Kind = "schedule.cron-interval"
	BadDuration   errs.Kind = "schedule.bad-duration"
	NotScheduled  errs.Kind = "schedule.not-scheduled"
	OnTheHost     errs.Kind = "schedule.on-the-host"
	// MissedRun is what to do about a run that did not happen (Status.Missed).
	MissedRun errs.Kind = "schedule.missed-run"
)

// Unlistable is the advice of doctor's schedules check when the scheduler
// cannot list the schedules; cmd/hobbs words it (hints_doctor.go).
const Unlistable errs.Kind = "schedule.unlistable"
