package main

import (
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/playbook"
	"github.com/hobbs-agent/hobbs/src/schedule"
)

func newScheduleCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schedule",
		Short: "Run autonomous playbooks on a schedule",
		Long: `Put headless runs of autonomous playbooks (hobbs playbook run NAME) on your
own scheduler: systemd user timers where systemd runs for you (unit files
hobbs-playbook-NAME.service and .timer under $XDG_CONFIG_HOME/systemd/user),
cron otherwise (a marked block in your crontab). Hobbs runs no daemon of its
own. HOBBS_SCHEDULER=systemd or cron chooses the scheduler.

A run missed while the machine was off runs once at the next start
(systemd's Persistent=true; cron has no catch-up). Two runs of one playbook
never overlap: a run that finds the previous one still going is refused.`,
		Example: `  hobbs schedule add weekly-report --at "Mon *-*-* 09:00"
  hobbs schedule add inbox-triage --every 30m
  hobbs schedule list
  hobbs schedule rm weekly-report`,
	}
	cmd.AddCommand(newScheduleAddCmd(a), newScheduleListCmd(a), newScheduleRmCmd(a))
	return cmd
}

func newScheduleAddCmd(a *app) *cobra.Command {
	var every, at string
	cmd := &cobra.Command{
		Use:   "add NAME --every DURATION | --at SPEC",
		Short: "Schedule headless runs of an autonomous playbook",
		Long: `Schedule 'hobbs playbook run NAME' for the instance, with the absolute path of
this hobbs binary. Only an autonomous playbook with a run: block can be
scheduled, and only where the scheduler can fire it (a cron daemon runs, a
systemd user manager answers); it approves the playbook as it is.

--every takes a Go duration of at least 1m (30m, 2h, 24h, 168h). One that
divides an hour or a day, or is a day or a week, runs on the clock (every
30m: at :00 and :30); systemd runs any other interval after the last run,
cron refuses it and names the nearest it can run.

--at takes a systemd calendar event (man systemd.time): "Mon *-*-* 09:00",
"Mon..Fri 08:30", "*-*-01 06:00", daily, weekly. With cron only
[WEEKDAYS] [*-MM-DD] HH:MM can be expressed; anything else is refused.

The same schedule again changes nothing; a different one replaces it.`,
		Example: `  hobbs schedule add weekly-report --at "Mon *-*-* 09:00"
  hobbs schedule add inbox-triage --every 30m`,
		Args: usageArgs(cobra.ExactArgs(1)),
	}
	cmd.Flags().StringVar(&every, "every", "", "run every `DURATION` (at least 1m)")
	cmd.Flags().StringVar(&at, "at", "", "run at the calendar event `SPEC` (systemd OnCalendar form)")
	cmd.MarkFlagsMutuallyExclusive("every", "at")
	cmd.MarkFlagsOneRequired("every", "at")
	out := a.jsonFlag(cmd, "print the result as JSON")
	cmd.RunE = a.withPlaybooks(func(cmd *cobra.Command, args []string, in instance.Instance, st *playbook.Store) error {
		name := args[0]
		spec, err := schedule.ParseSpec(every, at)
		if err != nil {
			return err
		}
		res, err := schedule.AddPlaybook(schedule.OptionsFromEnv(st.Audit), st, name, spec)
		if err != nil {
			return err
		}
		return out.print(res, func(w io.Writer) error {
			where := schedule.Where(res.Backend, name)
			switch {
			case !res.Changed:
				a.status("%s is already scheduled %s (%s); nothing changed", name, spec, where)
			case res.Replaced != "":
				a.status("%s: scheduled %s instead of %s (%s)", name, spec, res.Replaced, where)
			default:
				a.status("%s: scheduled %s (%s)", name, spec, where)
			}
			if res.Next != "" {
				a.status("next run: %s", res.Next)
			}
			return nil
		})
	})
	return cmd
}

func newScheduleListCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the scheduled playbooks, their next run and last outcome",
		Long: `List the schedules hobbs made in your scheduler (every instance's), with the
next run and the outcome of the last run recorded in the instance's task
log; a due run that did not happen is flagged MISSED.`,
		Example: `  hobbs schedule list
  hobbs schedule list --json`,
		Args: usageArgs(cobra.NoArgs),
	}
	out := a.jsonFlag(cmd, "print as JSON")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		l, err := schedule.ListStatus(schedule.OptionsFromEnv(nil), time.Now())
		if err != nil {
			return err
		}
		if l.CannotFire != nil {
			a.warn("%v (fix: %s)", l.CannotFire, hintOf(l.CannotFire))
		}
		a.warnMissed(l.Rows)
		return printTable(out, l.Rows, "no schedules ("+l.Backend+")", schedule.StatusColumns, schedule.Status.Row)
	}
	return cmd
}

// warnMissed warns of each schedule whose due run did not happen.
func (a *app) warnMissed(rows []schedule.Status) {
	for _, s := range rows {
		if s.Missed != "" {
			a.warn("%s (%s)", s.MissedLine(), adviceText(errs.NewAdvice(schedule.MissedRun, "name", s.Playbook)))
		}
	}
}

func newScheduleRmCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rm NAME",
		Short: "Remove a playbook's schedule",
		Long: `Remove the schedule of playbook NAME from your scheduler (the systemd timer
is stopped and its unit files removed, or its lines leave the crontab). A
run in progress finishes. The playbook itself is not changed.`,
		Example: `  hobbs schedule rm weekly-report`,
		Args:    usageArgs(cobra.ExactArgs(1)),
	}
	cmd.RunE = a.withExistingInstance(func(cmd *cobra.Command, args []string, in instance.Instance) error {
		name := args[0]
		backend, err := schedule.RemovePlaybook(schedule.OptionsFromEnv(a.audit(in)), name)
		if err != nil {
			return err
		}
		a.status("%s: schedule removed (%s)", name, backend)
		return nil
	})
	return cmd
}
