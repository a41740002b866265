package schedule

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hobbs-agent/hobbs/src/errs"
)

// Schedules never fail silently. A schedule is added only where the
// scheduler can fire it (CanFire): a cron daemon runs, or a systemd user
// manager answers. A due run that did not happen is flagged by hobbs
// schedule list and hobbs doctor, and reported once by the next hobbs
// command (missed.go).

// cronDaemons are the process names of the cron daemons that run users'
// crontabs (Debian's cron, cronie's and busybox's crond, fcron).
var cronDaemons = map[string]bool{"cron": true, "crond": true, "fcron": true}

// cronRunning reports whether a cron daemon runs, by the names of the
// processes in the proc directory (Options.ProcDir). known is false when
// it cannot tell: /proc shows only this user's processes (hidepid), or
// cannot be read.
func cronRunning(procDir string) (running, known bool) {
	ents, err := os.ReadDir(procDir)
	if err != nil {
		return false, false
	}
	seen := false
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		b, err := os.ReadFile(filepath.Join(procDir, e.Name(), "comm"))
		if err != nil {
			continue
		}
		if pid == 1 {
			seen = true
		}
		if cronDaemons[strings.TrimSpace(string(b))] {
			return true, true
		}
	}
	// Without pid 1, /proc hides other users' processes: the daemon,
	// root's, would not show.
	return false, seen
}

// userManager says whether a systemd user manager answers (systemctl
// --user is-system-running), and if not, what systemctl said (its first
// line: "Failed to connect to bus: No medium found", "offline").
func userManager(o Options) (ok bool, said string) {
	out, err := exec.Command(o.Systemctl, "--user", "is-system-running").CombinedOutput()
	text := strings.TrimSpace(string(out))
	first, _, _ := strings.Cut(text, "\n")
	for _, l := range strings.Split(text, "\n") {
		switch strings.TrimSpace(l) {
		case "running", "degraded", "starting", "initializing":
			return true, ""
		}
	}
	switch {
	case first != "":
		return false, first
	case err != nil:
		return false, err.Error()
	}
	return false, "no answer"
}

// CanFire checks that backend (a name Detect gives) can fire a schedule
// on this machine: a systemd user manager answers, or a cron daemon runs.
// The error says what is missing, and advises how to fix it, never a
// raw bus error.
func CanFire(o Options, backend string) error {
	if err := o.fill(); err != nil {
		return err
	}
	switch backend {
	case "systemd":
		if ok, said := userManager(o); !ok {
			return errs.Failf("no systemd user manager answers for you (systemctl --user is-system-running: %s), so a timer would never fire", said).
				Advise(NoUserManager)
		}
	case "cron":
		running, known := cronRunning(o.ProcDir)
		if known && !running {
			return errs.Failf("no cron daemon runs on this machine, so a line in your crontab would never fire").
				Advise(NoCronDaemon)
		}
	}
	return nil
}

// bus errors are what systemctl says when it cannot reach the user
// manager.
func busError(msg string) bool {
	for _, s := range []string{"Failed to connect to bus", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR", "No medium found"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// systemctlError is the error of a systemctl call: a clear one, with the
// fix, when the user manager is not reachable.
func systemctlError(err error) error {
	var ce *cmdError
	if errors.As(err, &ce) && busError(ce.msg) {
		first, _, _ := strings.Cut(ce.msg, "\n")
		return errs.Failf("no systemd user manager answers for you (%s: %s)", ce.cmd, first).Advise(NoUserManager)
	}
	return errs.Wrap(errs.Failure, err, "systemctl")
}

// notInstalled reports whether err says a command is not installed.
func notInstalled(err error) bool {
	return errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist)
}
