package main

import (
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/schedule"
)

// startUserManager is how to get a systemd user manager for the user
// (schedules and hobbs serve install need one).
const startUserManager = "start your systemd user manager: sudo loginctl enable-linger $USER, then log in again " +
	"(so that XDG_RUNTIME_DIR and the user bus exist); or schedule with cron: HOBBS_SCHEDULER=cron (a cron daemon must run)"

// scheduleHints words the advice of package schedule.
var scheduleHints = map[errs.Kind]words{
	schedule.NoUserManager: say(startUserManager),
	schedule.NoCronDaemon: say("start a cron daemon (Debian, Ubuntu: sudo apt-get install cron && sudo systemctl enable --now cron; " +
		"Fedora: sudo systemctl enable --now crond), or schedule with your systemd user manager: HOBBS_SCHEDULER=systemd"),
	schedule.NoCrontab:    say("is cron installed? (Debian: apt-get install cron) On a machine with systemd, HOBBS_SCHEDULER=systemd uses user timers"),
	schedule.DamagedBlock: say("fix hobbs's block (between {begin} and {end}) with crontab -e, or delete it and add the schedules again"),
	schedule.UnitExists:   say("remove or rename it first"),
	schedule.BadCalendar: say("systemd calendar events look like \"Mon *-*-* 09:00\", \"Mon..Fri 08:30\", \"*-*-01 06:00\", daily, weekly " +
		"(man systemd.time)"),
	schedule.CronCalendar: say("cron takes [WEEKDAYS] [*-MM-DD] HH:MM, e.g. --at \"Mon..Fri *-*-* 09:00\" or --at \"*-*-01 08:30\""),
	schedule.CronInterval: say("nearest: {near}; or a time of day with --at (e.g. --at \"*-*-* 09:00\")"),
	schedule.BadDuration:  say("durations look like 30m, 2h, 24h (a day), 168h (a week)"),
	schedule.NotScheduled: say("see the schedules with: hobbs schedule list"),
	schedule.OnTheHost:    say("run it on the host: hobbs schedule"),
	schedule.MissedRun: say("a run the scheduler started but Hobbs refused is in the instance's audit log (event playbook.run, outcome refused); " +
		"the scheduler's own log has its output (systemd: journalctl --user -u hobbs-playbook-{name}.service; cron: the mail cron sends you); " +
		"hobbs doctor checks that the scheduler runs"),
}
