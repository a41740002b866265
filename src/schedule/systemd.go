package schedule

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// systemd schedules with systemd user timers.
type systemd struct{ o Options }

func (s *systemd) Name() string { return "systemd" }

// UnitName is the name (without suffix) of the units of playbook name.
func UnitName(name string) string { return "hobbs-playbook-" + name }

func (s *systemd) paths(name string) (service, timer string) {
	base := filepath.Join(s.o.UnitDir, UnitName(name))
	return base + ".service", base + ".timer"
}

// systemdQuote quotes one ExecStart argument: double quotes, with the
// backslash, the double quote, the specifier % and the variable $ escaped.
func systemdQuote(arg string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, `%`, `%%`, `$`, `$$`)
	return `"` + r.Replace(arg) + `"`
}

// Units returns the service and timer files for j.
func Units(j Job) (service, timer []byte, err error) {
	if err := checkJob(j); err != nil {
		return nil, nil, err
	}
	head := j.metaLine() + "\n# Written by 'hobbs schedule add'; removed by 'hobbs schedule rm " + j.Playbook + "'.\n"
	var args []string
	for _, a := range j.Command() {
		args = append(args, systemdQuote(a))
	}
	svc := head + "[Unit]\n" +
		"Description=" + j.describe() + "\n\n" +
		"[Service]\n" +
		"Type=oneshot\n" +
		"ExecStart=" + strings.Join(args, " ") + "\n"
	var when string
	if j.Spec.At != "" {
		when = "OnCalendar=" + j.Spec.At + "\nPersistent=true\n"
	} else if _, cal, ok := everyCalendar(j.Spec.Every); ok {
		when = "OnCalendar=" + cal + "\nPersistent=true\n"
	} else {
		secs := fmt.Sprintf("%ds", int(j.Spec.Every/time.Second))
		when = "OnActiveSec=" + secs + "\nOnUnitActiveSec=" + secs + "\n"
	}
	tmr := head + "[Unit]\n" +
		"Description=Run the Hobbs playbook " + j.Playbook + " " + j.Spec.String() + "\n\n" +
		"[Timer]\n" + when + "\n" +
		"[Install]\n" +
		"WantedBy=timers.target\n"
	return []byte(svc), []byte(tmr), nil
}

func (s *systemd) lock() (func(), error) { return lockSchedules(s.o.LockPath) }

func (s *systemd) systemctl(args ...string) error {
	_, err := run(nil, s.o.Systemctl, append([]string{"--user"}, args...)...)
	if err != nil {
		return systemctlError(err)
	}
	return nil
}

func (s *systemd) Add(j Job) (Result, error) {
	res := Result{Backend: s.Name()}
	if j.Spec.At != "" {
		if err := checkCalendar(j.Spec.At); err != nil {
			return res, err
		}
	}
	if _, _, err := Units(j); err != nil {
		return res, err
	}
	unlock, err := s.lock()
	if err != nil {
		return res, err
	}
	defer unlock()
	svcPath, tmrPath := s.paths(j.Playbook)
	oldSvc, errS := readUnit(svcPath)
	oldTmr, errT := readUnit(tmrPath)
	if o, ok := readMeta(oldTmr); errT == nil && ok && o.Spec == j.Spec && o.Instance == j.Instance && o.Binary == j.Binary {
		j.Added = o.Added // the same schedule: made when it was first
	}
	svc, tmr, err := Units(j)
	if err != nil {
		return res, err
	}
	if errS == nil && errT == nil && bytes.Equal(oldSvc, svc) && bytes.Equal(oldTmr, tmr) {
		// Unchanged; enabling again is harmless and repairs a timer a
		// failed add left disabled.
		if err := s.systemctl("enable", "--now", UnitName(j.Playbook)+".timer"); err != nil {
			return res, err
		}
		res.Next = s.next(j)
		return res, nil
	}
	if errT == nil {
		if old, ok := readMeta(oldTmr); ok {
			res.Replaced = old.Spec.String()
		} else {
			return res, errs.Failf("%s exists and was not written by hobbs; nothing changed", tmrPath).
				Advise(UnitExists)
		}
	}
	if err := os.MkdirAll(s.o.UnitDir, 0o755); err != nil {
		return res, errs.Wrap(errs.Failure, err, "create %s", s.o.UnitDir)
	}
	if err := safefile.Write(svcPath, svc, 0o644); err != nil {
		return res, errs.Wrap(errs.Failure, err, "write %s", svcPath)
	}
	if err := safefile.Write(tmrPath, tmr, 0o644); err != nil {
		return res, errs.Wrap(errs.Failure, err, "write %s", tmrPath)
	}
	res.Changed = true
	if err := s.systemctl("daemon-reload"); err != nil {
		return res, err
	}
	if err := s.systemctl("enable", "--now", UnitName(j.Playbook)+".timer"); err != nil {
		return res, err
	}
	if res.Replaced != "" {
		// A running timer keeps its old elapse time until restarted.
		if err := s.systemctl("restart", UnitName(j.Playbook)+".timer"); err != nil {
			return res, err
		}
	}
	res.Next = s.next(j)
	return res, nil
}

// checkCalendar validates an OnCalendar spec with systemd-analyze when it is
// installed, else with the subset this package parses.
func checkCalendar(spec string) error {
	if _, err := run(nil, "systemd-analyze", "calendar", spec); err != nil {
		var ce *cmdError
		if errors.As(err, &ce) && ce.err != nil && !errors.Is(ce.err, fs.ErrNotExist) && !strings.Contains(ce.err.Error(), "executable file not found") {
			return errs.Usagef("--at %q: %s", spec, ce.msg).
				Advise(BadCalendar)
		}
		if _, perr := parseCalendar(spec); perr != nil {
			return errs.Usagef("--at %v", perr)
		}
	}
	return nil
}

// readUnit reads a unit file (a unit hobbs writes is a few hundred bytes;
// 64 KiB bounds what a file put in its place makes hobbs read).
func readUnit(path string) ([]byte, error) {
	return safefile.Beneath(filepath.Dir(path)).ReadFile(filepath.Base(path), 64<<10)
}

func readMeta(unit []byte) (Job, bool) {
	sc := bufio.NewScanner(bytes.NewReader(unit))
	for sc.Scan() {
		if j, ok := parseMetaLine(sc.Text()); ok {
			return j, true
		}
	}
	return Job{}, false
}

// next asks systemd for the timer's next elapse, else computes it.
func (s *systemd) next(j Job) string {
	out, err := run(nil, s.o.Systemctl, "--user", "show", UnitName(j.Playbook)+".timer", "--property=NextElapseUSecRealtime", "--value")
	if v := strings.TrimSpace(string(out)); err == nil && v != "" && v != "n/a" && v != "0" {
		// systemd prints local time as "Mon 2026-11-30 09:00:00 CET".
		if t, err := time.ParseInLocation("Mon 2006-01-02 15:04:05 MST", v, time.Local); err == nil {
			return t.Format(time.RFC3339)
		}
		return v
	}
	return nextRun(j, s.o.Now())
}

func (s *systemd) Remove(name string) (bool, error) {
	if !validName(name) {
		return false, errs.Usagef("invalid playbook name %q", name)
	}
	unlock, err := s.lock()
	if err != nil {
		return false, err
	}
	defer unlock()
	svcPath, tmrPath := s.paths(name)
	data, err := readUnit(tmrPath)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, errs.Wrap(errs.Failure, err, "read %s", tmrPath)
	}
	if _, ok := readMeta(data); !ok {
		return false, errs.Failf("%s was not written by hobbs; left as it is", tmrPath)
	}
	// The timer stops first, so it cannot start the service while its
	// files go; a run in progress finishes.
	if err := s.systemctl("disable", "--now", UnitName(name)+".timer"); err != nil {
		return false, err
	}
	for _, p := range []string{tmrPath, svcPath} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, errs.Wrap(errs.Failure, err, "remove %s", p)
		}
	}
	return true, s.systemctl("daemon-reload")
}

func (s *systemd) List() ([]Entry, error) {
	out, err := s.jobs()
	for i := range out {
		out[i].Next = s.next(out[i].job)
	}
	return out, err
}

// jobs lists the schedules from the unit files alone (List without
// asking systemctl for the next runs).
func (s *systemd) jobs() ([]Entry, error) {
	des, err := os.ReadDir(s.o.UnitDir)
	if errors.Is(err, fs.ErrNotExist) {
		return []Entry{}, nil
	}
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "read %s", s.o.UnitDir)
	}
	out := []Entry{}
	for _, de := range des {
		n := de.Name()
		if !strings.HasPrefix(n, "hobbs-playbook-") || !strings.HasSuffix(n, ".timer") || !de.Type().IsRegular() {
			continue
		}
		data, err := readUnit(filepath.Join(s.o.UnitDir, n))
		if err != nil {
			continue
		}
		j, ok := readMeta(data)
		if !ok {
			continue
		}
		e := j.entry(s.Name())
		e.Unit = UnitName(j.Playbook) + ".timer"
		out = append(out, e)
	}
	sort.Slice(out, func(i, k int) bool { return out[i].Playbook < out[k].Playbook })
	return out, nil
}

// describe is the service's description.
func (j Job) describe() string {
	if j.Task == TaskBackup {
		return "Hobbs backup of " + j.Instance
	}
	return "Hobbs playbook " + j.Playbook + " (headless run)"
}
