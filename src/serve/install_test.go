package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hobbs-agent/hobbs/src/schedule"
)

// Install writes the unit from the template with this binary and the
// instance (quoted for systemd), reloads and enables it; without a user
// manager it writes nothing and says what to do; as root it refuses.
func TestInstall(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "systemctl.log")
	ctl := filepath.Join(dir, "systemctl")
	if err := os.WriteFile(ctl, []byte("#!/bin/sh\necho \"$*\" >> "+log+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tpl, err := os.ReadFile("../../dist/hobbs-serve.service")
	if err != nil {
		t.Fatal(err)
	}
	o := InstallOptions{Template: tpl, Binary: "/opt/hobbs 1/hobbs", Instance: "/home/u/.local/share/hobbs",
		Schedule: schedule.Options{Scheduler: "systemd", Systemctl: ctl, UnitDir: filepath.Join(dir, "units")}, Root: func() bool { return false }}
	res, err := Install(o)
	if err != nil || !res.Changed {
		t.Fatalf("%+v %v", res, err)
	}
	unit, _ := os.ReadFile(filepath.Join(dir, "units", UnitName))
	if !strings.Contains(string(unit), "\nExecStart=\"/opt/hobbs 1/hobbs\" \"--instance\" \"/home/u/.local/share/hobbs\" \"serve\"\n") ||
		!strings.Contains(string(unit), "KillSignal=SIGTERM") || strings.Contains(string(unit), "@EXEC@") {
		t.Fatalf("unit:\n%s", unit)
	}
	calls, _ := os.ReadFile(log)
	if string(calls) != "--user daemon-reload\n--user enable --now hobbs-serve.service\n" {
		t.Fatalf("systemctl calls:\n%s", calls)
	}
	if res, err := Install(o); err != nil || res.Changed {
		t.Fatalf("again: %+v %v", res, err)
	}
	o.Schedule.Scheduler, o.Schedule.UnitDir = "cron", filepath.Join(dir, "none")
	if _, err := Install(o); err == nil || !strings.Contains(err.Error(), "no systemd user manager") {
		t.Fatalf("without a user manager: %v", err)
	}
	if _, err := os.Stat(o.Schedule.UnitDir); !os.IsNotExist(err) {
		t.Fatalf("wrote units without a user manager")
	}
	o.Root = func() bool { return true }
	if _, err := Install(o); err == nil || !strings.Contains(err.Error(), "will not run as root") {
		t.Fatalf("as root: %v", err)
	}
}
