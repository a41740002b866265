package schedule

import (
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/task"
)

// fakeProc is a proc directory holding one process per name (pid 1 first).
func fakeProc(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for i, n := range names {
		p := filepath.Join(dir, strconv.Itoa(i+1))
		os.MkdirAll(p, 0o755)
		os.WriteFile(filepath.Join(p, "comm"), []byte(n+"\n"), 0o644)
	}
	os.MkdirAll(filepath.Join(dir, "self"), 0o755) // not a pid
	return dir
}

// fakeSystemctl is a systemctl that prints out and exits with code for
// every call.
func fakeSystemctl(t *testing.T, out string, code int) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "systemctl")
	os.WriteFile(p, []byte("#!/bin/sh\necho '"+out+"' >&2\nexit "+strconv.Itoa(code)+"\n"), 0o755)
	return p
}

// A schedule is added only where the scheduler can fire it; what is
// missing is named with the command that fixes it, never a raw bus error.
func TestCanFire(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "s.lock")
	cron := func(proc string) error {
		return CanFire(Options{LockPath: lock, ProcDir: proc}, "cron")
	}
	if err := cron(fakeProc(t, "systemd", "sshd", "cron")); err != nil {
		t.Errorf("cron runs: %v", err)
	}
	if err := cron(fakeProc(t, "init", "crond")); err != nil {
		t.Errorf("crond runs: %v", err)
	}
	err := cron(fakeProc(t, "systemd", "sshd", "anacron"))
	if errs.Code(err) != errs.Failure || !strings.Contains(err.Error(), "no cron daemon runs on this machine") ||
		errs.AdviceOf(err).Kind != NoCronDaemon {
		t.Errorf("no cron daemon: %v (%v)", err, errs.AdviceOf(err))
	}
	// /proc shows only our processes (hidepid): it cannot tell, so it
	// does not refuse.
	hidden := fakeProc(t, "systemd", "bash")
	os.RemoveAll(filepath.Join(hidden, "1"))
	if err := cron(hidden); err != nil {
		t.Errorf("hidepid: %v", err)
	}
	sd := func(systemctl string) error {
		return CanFire(Options{LockPath: lock, Systemctl: systemctl}, "systemd")
	}
	running := filepath.Join(t.TempDir(), "systemctl")
	os.WriteFile(running, []byte("#!/bin/sh\necho degraded\nexit 1\n"), 0o755)
	if err := sd(running); err != nil {
		t.Errorf("a degraded user manager: %v", err)
	}
	err = sd(fakeSystemctl(t, "Failed to connect to bus: No medium found", 1))
	if err == nil || !strings.Contains(err.Error(), "no systemd user manager answers for you (systemctl --user is-system-running: Failed to connect to bus: No medium found)") ||
		errs.AdviceOf(err).Kind != NoUserManager {
		t.Errorf("no bus: %v (%v)", err, errs.AdviceOf(err))
	}
	// A bus error from any other call is said the same way.
	s := &systemd{Options{Systemctl: fakeSystemctl(t, "Failed to connect to bus: $DBUS_SESSION_BUS_ADDRESS and $XDG_RUNTIME_DIR not defined", 1)}}
	if err := s.systemctl("daemon-reload"); err == nil || !strings.HasPrefix(err.Error(), "no systemd user manager answers for you (") ||
		errs.AdviceOf(err).Kind != NoUserManager {
		t.Errorf("daemon-reload without a bus: %v", err)
	}
}

// AddPlaybook refuses, before it approves or writes anything, when no
// cron daemon runs.
func TestAddPlaybookRefusesWhenCronCannotFire(t *testing.T) {
	in, st := scheduledInstance(t)
	cmd, table := fakeCrontab(t, "")
	o := Options{Scheduler: "cron", Crontab: cmd, LockPath: filepath.Join(t.TempDir(), "s.lock"), ProcDir: fakeProc(t, "init")}
	if _, err := AddPlaybook(o, st, "report", Spec{Every: time.Hour}); err == nil || !strings.Contains(err.Error(), "no cron daemon runs") {
		t.Fatalf("add without cron: %v", err)
	}
	if _, err := os.Stat(table); err == nil {
		t.Error("the crontab was written")
	}
	if _, err := os.Stat(filepath.Join(in.Grants(), "report.json")); err == nil {
		t.Error("the playbook was approved")
	}
}

func TestMissedDue(t *testing.T) {
	loc := time.Local
	at := func(s string) time.Time {
		v, err := time.ParseInLocation("2006-01-02 15:04", s, loc)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	none := time.Time{}
	for _, c := range []struct {
		name       string
		spec       Spec
		added, run time.Time
		now        time.Time
		want       time.Time
	}{
		{"daily, ran", Spec{At: "*-*-* 09:00"}, at("2026-11-20 08:00"), at("2026-11-26 09:00"), at("2026-11-26 12:00"), none},
		{"daily, ran late within the minute before", Spec{At: "*-*-* 09:00"}, at("2026-11-20 08:00"), at("2026-11-26 08:59"), at("2026-11-26 12:00"), none},
		{"daily, last ran yesterday", Spec{At: "*-*-* 09:00"}, at("2026-11-20 08:00"), at("2026-11-25 09:00"), at("2026-11-26 12:00"), at("2026-11-26 09:00")},
		{"daily, never ran", Spec{At: "*-*-* 09:00"}, at("2026-11-20 08:00"), none, at("2026-11-26 12:00"), at("2026-11-26 09:00")},
		{"daily, within the grace", Spec{At: "*-*-* 09:00"}, at("2026-11-20 08:00"), at("2026-11-25 09:00"), at("2026-11-26 09:10"), none},
		{"daily, just past the grace", Spec{At: "*-*-* 09:00"}, at("2026-11-20 08:00"), at("2026-11-25 09:00"), at("2026-11-26 09:15"), at("2026-11-26 09:00")},
		{"added after the due time", Spec{At: "*-*-* 09:00"}, at("2026-11-26 10:00"), none, at("2026-11-26 23:00"), none},
		{"added when unknown", Spec{At: "*-*-* 09:00"}, none, none, at("2026-11-26 23:00"), none},
		{"every 30m on the clock", Spec{Every: 30 * time.Minute}, at("2026-11-26 08:00"), at("2026-11-26 10:00"), at("2026-11-26 11:00"), at("2026-11-26 10:30")},
		{"every 90m after the run", Spec{Every: 90 * time.Minute}, at("2026-11-26 08:00"), at("2026-11-26 10:00"), at("2026-11-26 11:40"), none},
		{"every 90m, late", Spec{Every: 90 * time.Minute}, at("2026-11-26 08:00"), at("2026-11-26 10:00"), at("2026-11-26 11:50"), at("2026-11-26 11:30")},
		{"every 90m, never ran", Spec{Every: 90 * time.Minute}, at("2026-11-26 08:00"), none, at("2026-11-26 10:00"), at("2026-11-26 09:30")},
		{"a calendar only systemd reads", Spec{At: "Mon *-*-* 09:00 Europe/Paris"}, at("2026-11-01 08:00"), none, at("2026-11-26 12:00"), none},
	} {
		got := missedDue(Job{Spec: c.spec, Added: c.added}, c.run, c.now)
		if !got.Equal(c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// prev is next's mirror: the minute it returns matches, and no minute
// after it up to the time asked does.
func TestCalendarPrev(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for _, spec := range []string{"Mon *-*-* 09:00", "*-*-01 06:00", "*-*-* *:00/15", "Mon..Fri 08:30", "*-02-29 00:00", "monthly", "*-*-* 00/6:30"} {
		c, err := parseCalendar(spec)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 50; i++ {
			at := time.Date(2026, time.Month(1+r.Intn(12)), 1+r.Intn(28), r.Intn(24), r.Intn(60), r.Intn(60), 0, time.UTC)
			p := c.prev(at)
			if p.IsZero() || p.After(at) {
				t.Fatalf("%q prev(%v) = %v", spec, at, p)
			}
			if n := c.next(p); !n.After(at) {
				t.Fatalf("%q: prev(%v) = %v, but %v matches in between", spec, at, p, n)
			}
			if c.next(p.Add(-time.Minute)) != p {
				t.Fatalf("%q: prev(%v) = %v does not match", spec, at, p)
			}
		}
	}
}

// A missed run is reported once by MissedRuns (what every command
// calls), again only after a run happened and another was missed; a run
// since the due time clears it.
func TestMissedRunsReportedOnce(t *testing.T) {
	in := instance.Instance{Root: t.TempDir()}
	os.MkdirAll(in.Playbooks(), 0o755)
	os.WriteFile(in.Playbook("report"), []byte(autonomous), 0o644)
	added := time.Now().Add(-48 * time.Hour).UTC().Truncate(time.Second)
	line := `# hobbs-schedule {"playbook":"report","every":"1h","instance":"` + in.Root + `","binary":"/usr/bin/hobbs","added":"` + added.Format(time.RFC3339) + `"}`
	cmd, _ := fakeCrontab(t, "# BEGIN hobbs schedules (hobbs schedule add/rm change this block)\n"+line+"\n0 * * * * /usr/bin/hobbs\n# END hobbs schedules\n")
	state := t.TempDir()
	o := Options{Scheduler: "cron", Crontab: cmd, LockPath: filepath.Join(state, "s.lock"), StatePath: filepath.Join(state, "missed.json")}
	now := time.Now()
	got := MissedRuns(o, now)
	if len(got) != 1 || got[0].Playbook != "report" || got[0].Missed == "" || !strings.Contains(got[0].MissedLine(), "it has not run since it was scheduled") {
		t.Fatalf("first: %+v", got)
	}
	if got := MissedRuns(o, now.Add(time.Hour)); len(got) != 0 {
		t.Fatalf("reported again: %+v", got)
	}
	// A run now: nothing missed an hour from now (within the grace).
	log := task.Log{Instance: in}
	if _, err := log.Start(task.RunTitle("report"), "hobbs", "report"); err != nil {
		t.Fatal(err)
	}
	if got := MissedRuns(o, now.Add(10*time.Minute)); len(got) != 0 {
		t.Fatalf("after a run: %+v", got)
	}
	// Two hours on, the next due times passed without a run: reported.
	if got := MissedRuns(o, now.Add(2*time.Hour+MissGrace)); len(got) != 1 || !strings.Contains(got[0].MissedLine(), "its last run started") {
		t.Fatalf("missed after a run: %+v", got)
	}
	if got := MissedRuns(Options{InContainer: true}, now); got != nil {
		t.Errorf("in the container: %+v", got)
	}
}
