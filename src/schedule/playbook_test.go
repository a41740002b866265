package schedule

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/playbook"
	"github.com/hobbs-agent/hobbs/src/task"
)

func TestParseSpec(t *testing.T) {
	if s, err := ParseSpec("30m", ""); err != nil || s.Every != 30*time.Minute || s.At != "" {
		t.Errorf("every: %+v %v", s, err)
	}
	if s, err := ParseSpec("", "daily"); err != nil || s.At != "daily" || s.Every != 0 {
		t.Errorf("at: %+v %v", s, err)
	}
	for _, c := range []struct{ every, at, want string }{
		{"soon", "", "is not a duration"},
		{"30s", "", "the shortest interval is 1m"},
		{"1h", "daily", "exactly one"},
		{"", "", "exactly one"},
	} {
		if _, err := ParseSpec(c.every, c.at); errs.Code(err) != errs.Usage || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseSpec(%q, %q): %v, want %q", c.every, c.at, err, c.want)
		}
	}
}

func TestWhere(t *testing.T) {
	if got := Where("systemd", "weekly"); got != "systemd timer hobbs-playbook-weekly.timer" {
		t.Error(got)
	}
	if got := Where("cron", "weekly"); got != "cron" {
		t.Error(got)
	}
	if got := (Entry{Every: "30m"}).When() + "|" + (Entry{At: "daily"}).When(); got != "every 30m|at daily" {
		t.Error(got)
	}
}

const autonomous = `---
title: Report
stage: autonomous
tags: []
created: 2026-01-01
updated: 2026-01-01
run:
  hosts: [api.github.com]
  secrets: []
  tools: [Read]
  max_turns: 10
  timeout: 10m
---
# Report

## Trigger
## Inputs
## Steps
## Outputs
## Judgment Calls
## Sensitive Data
## Automation Potential
## Notes
`

// An instance with the playbooks report (autonomous) and draft (manual),
// its store recording to its audit log.
func scheduledInstance(t *testing.T) (instance.Instance, *playbook.Store) {
	t.Helper()
	in := instance.Instance{Root: t.TempDir()}
	os.MkdirAll(in.Playbooks(), 0o755)
	os.MkdirAll(filepath.Dir(in.AuditLog()), 0o755)
	os.WriteFile(in.Playbook("report"), []byte(autonomous), 0o644)
	os.WriteFile(in.Playbook("draft"), []byte(strings.Replace(autonomous, "stage: autonomous", "stage: manual", 1)), 0o644)
	return in, playbook.Open(in, 30, nil, audit.New(in.FS(), in.AuditLog()))
}

func TestAddAndRemovePlaybook(t *testing.T) {
	in, st := scheduledInstance(t)
	cmd, table := fakeCrontab(t, "")
	o := Options{Scheduler: "cron", Crontab: cmd, LockPath: filepath.Join(t.TempDir(), "s.lock"), Audit: st.Audit,
		ProcDir: fakeProc(t, "systemd", "cron")}
	if _, err := AddPlaybook(o, st, "draft", Spec{Every: time.Hour}); errs.Code(err) != errs.Usage ||
		!strings.Contains(err.Error(), "only autonomous playbooks can be scheduled") {
		t.Fatalf("manual playbook: %v", err)
	}
	if _, err := AddPlaybook(o, st, "none", Spec{Every: time.Hour}); err == nil {
		t.Fatal("a missing playbook was scheduled")
	}
	res, err := AddPlaybook(o, st, "report", Spec{Every: time.Hour})
	if err != nil || !res.Changed || res.Backend != "cron" {
		t.Fatalf("%+v %v", res, err)
	}
	d, _, _ := st.Get("report")
	if err := playbook.CheckGrant(in, "report", d); err != nil {
		t.Errorf("scheduling did not approve the run: block: %v", err)
	}
	data, _ := os.ReadFile(table)
	if !strings.Contains(string(data), `"playbook":"report","every":"1h","instance":"`+in.Root+`"`) {
		t.Errorf("crontab:\n%s", data)
	}
	if backend, err := RemovePlaybook(o, "report"); err != nil || backend != "cron" {
		t.Fatalf("remove: %s %v", backend, err)
	}
	if _, err := RemovePlaybook(o, "report"); errs.Code(err) != errs.Failure || !strings.Contains(err.Error(), "report is not scheduled (cron)") {
		t.Fatalf("remove again: %v", err)
	}
	if _, err := RemovePlaybook(o, "../x"); errs.Code(err) != errs.Usage {
		t.Fatalf("bad name: %v", err)
	}
	b, _ := os.ReadFile(in.AuditLog())
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e audit.Entry
		json.Unmarshal([]byte(line), &e)
		got = append(got, e.Event+" "+e.Subject+" "+e.Outcome)
	}
	if want := "playbook.approve report ok|schedule.add report ok|schedule.rm report ok"; strings.Join(got, "|") != want {
		t.Errorf("events %q, want %s", got, want)
	}
	o.InContainer = true
	if _, err := AddPlaybook(o, st, "report", Spec{Every: time.Hour}); errs.Code(err) != errs.Usage ||
		!strings.Contains(err.Error(), "schedules live on the host") {
		t.Errorf("in the container: %v", err)
	}
}

func TestWithLastRuns(t *testing.T) {
	in, _ := scheduledInstance(t)
	log := task.Log{Instance: in}
	if _, err := log.Start(task.RunTitle("report"), "hobbs", "report"); err != nil {
		t.Fatal(err)
	}
	entries := []Entry{{Playbook: "report", Instance: in.Root}, {Playbook: "draft", Instance: in.Root},
		{Playbook: "report", Instance: filepath.Join(in.Root, "gone")}}
	got := WithLastRuns(entries, time.Now())
	if len(got) != 3 || got[0].LastOutcome != task.Running || got[0].LastRun == "" ||
		got[1].LastRun != "" || got[2].LastRun != "" {
		t.Fatalf("%+v", got)
	}
}

func TestBinaryIsAbsolute(t *testing.T) {
	bin, err := Binary()
	if err != nil || !filepath.IsAbs(bin) {
		t.Fatalf("%q %v", bin, err)
	}
}

func TestStatusRow(t *testing.T) {
	s := Status{Entry: Entry{Playbook: "report", Backend: "systemd", At: "Mon *-*-* 09:00", Next: "2026-11-23T09:00:00Z"},
		LastRun: "2026-11-16T09:00:02Z", LastOutcome: task.OK}
	if got, want := s.Row(), "report\tat Mon *-*-* 09:00\t2026-11-23T09:00:00Z\t"+task.OK+" 2026-11-16T09:00:02Z\tsystemd"; got != want {
		t.Errorf("ran: %q, want %q", got, want)
	}
	s = Status{Entry: Entry{Playbook: "triage", Backend: "cron", Every: "30m"}}
	if got, want := s.Row(), "triage\tevery 30m\t-\t-\tcron"; got != want {
		t.Errorf("never ran: %q, want %q", got, want)
	}
	if strings.Count(StatusColumns, "\t") != strings.Count(s.Row(), "\t") {
		t.Errorf("header %q and row %q differ in columns", StatusColumns, s.Row())
	}
}
