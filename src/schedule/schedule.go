// Package schedule puts headless playbook runs (hobbs playbook run NAME) on
// the user's own scheduler, never a daemon of Hobbs's: systemd user timers
// where systemd runs for the user, else a marked block in the user's
// crontab.
//
// systemd: two unit files per playbook under $XDG_CONFIG_HOME/systemd/user,
// hobbs-playbook-NAME.service (Type=oneshot; ExecStart runs the absolute
// path of hobbs with --instance made explicit) and hobbs-playbook-NAME.timer
// (OnCalendar= with Persistent=true, so a run missed while the machine was
// off or asleep runs once at the next start; or OnActiveSec= and
// OnUnitActiveSec= for an interval the clock cannot express), written
// atomically, then systemctl --user daemon-reload and enable --now.
//
// cron: one block between "# BEGIN hobbs schedules" and "# END hobbs
// schedules" in the crontab (crontab -l, crontab -), each entry a comment
// line carrying its metadata as JSON and the cron line. Everything outside
// the block is kept as it is; a damaged block is reported and the crontab
// never rewritten.
//
// Two runs of one playbook never overlap: systemd starts a oneshot service
// only when it is not already active, and hobbs playbook run itself takes
// the playbook's run lock (playbook.LockRun) and refuses a second run.
//
// Every change takes a per-user lock (Options.LockPath). Adding the same
// schedule again changes nothing; a different schedule for the same
// playbook replaces it. Each change (and each refusal) is recorded in the
// audit log the backend is detected with (Options.Audit): schedule.add,
// schedule.rm.
package schedule

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/errs"
)

// Spec is when a playbook runs: every Every, or at the calendar spec At
// (systemd's OnCalendar syntax). Exactly one is set.
type Spec struct {
	Every time.Duration
	At    string
}

// MinEvery is the shortest interval.
const MinEvery = time.Minute

// Check validates s independently of the backend.
func (s Spec) Check() error {
	switch {
	case s.Every != 0 && s.At != "", s.Every == 0 && s.At == "":
		return errs.Usagef("give exactly one of --every DURATION and --at SPEC")
	case s.At != "":
		if strings.ContainsAny(s.At, "\r\n\"\\%$") {
			return errs.Usagef("--at %q: unexpected character", s.At)
		}
	case s.Every < MinEvery:
		return errs.Usagef("--every %s: the shortest interval is %s", s.Every, FormatDuration(MinEvery))
	case s.Every%time.Minute != 0:
		return errs.Usagef("--every %s: use whole minutes", s.Every)
	}
	return nil
}

// String is how listings show s: "every 1h" or "at Mon *-*-* 09:00".
func (s Spec) String() string {
	if s.At != "" {
		return "at " + s.At
	}
	return "every " + FormatDuration(s.Every)
}

// Job is one scheduled playbook.
type Job struct {
	Playbook string
	Instance string // absolute instance directory, passed as --instance
	Binary   string // absolute path of hobbs
	Spec     Spec
	// Added is when the schedule was made (kept when the same schedule is
	// added again); zero for a schedule made before hobbs recorded it.
	Added time.Time
	// Task is what the job runs when it is not a playbook: TaskBackup
	// (hobbs backup, Playbook then BackupJob). "": the playbook.
	Task string
}

// TaskBackup is the Task of the backup schedule (hobbs backup schedule):
// it runs hobbs backup --scheduled, under the key BackupJob.
const TaskBackup = "backup"

// BackupJob is the key (in place of a playbook name) of the backup
// schedule of an instance; no playbook may take it (AddPlaybook).
const BackupJob = "hobbs-backup"

// Command is what the scheduler runs. --scheduled makes the run refuse a
// playbook whose stage is not autonomous (playbook.CanSchedule).
func (j Job) Command() []string {
	if j.Task == TaskBackup {
		return []string{j.Binary, "--instance", j.Instance, "backup", "--scheduled"}
	}
	return []string{j.Binary, "--instance", j.Instance, "playbook", "run", j.Playbook, "--scheduled"}
}

// meta is what a backend stores about a job beside the scheduler's own
// lines, to list it back.
type meta struct {
	Playbook string `json:"playbook"`
	Every    string `json:"every,omitempty"`
	At       string `json:"at,omitempty"`
	Instance string `json:"instance"`
	Binary   string `json:"binary"`
	Added    string `json:"added,omitempty"` // RFC 3339
	Task     string `json:"task,omitempty"`
}

func (j Job) meta() meta {
	m := meta{Playbook: j.Playbook, At: j.Spec.At, Instance: j.Instance, Binary: j.Binary, Task: j.Task}
	if j.Spec.Every != 0 {
		m.Every = FormatDuration(j.Spec.Every)
	}
	if !j.Added.IsZero() {
		m.Added = j.Added.UTC().Format(time.RFC3339)
	}
	return m
}

func (m meta) job() (Job, error) {
	j := Job{Playbook: m.Playbook, Instance: m.Instance, Binary: m.Binary, Spec: Spec{At: m.At}, Task: m.Task}
	if m.Added != "" {
		t, err := time.Parse(time.RFC3339, m.Added)
		if err != nil {
			return j, err
		}
		j.Added = t
	}
	if m.Every != "" {
		d, err := time.ParseDuration(m.Every)
		if err != nil {
			return j, err
		}
		j.Spec.Every = d
	}
	return j, nil
}

// metaPrefix starts the comment line carrying a job's metadata.
const metaPrefix = "# hobbs-schedule "

func (j Job) metaLine() string {
	b, _ := json.Marshal(j.meta())
	return metaPrefix + string(b)
}

func parseMetaLine(line string) (Job, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), strings.TrimSpace(metaPrefix)+" ")
	if !ok {
		return Job{}, false
	}
	var m meta
	if err := json.Unmarshal([]byte(rest), &m); err != nil || m.Playbook == "" {
		return Job{}, false
	}
	j, err := m.job()
	return j, err == nil
}

// Entry is one schedule in a listing.
type Entry struct {
	Playbook string   `json:"playbook"`
	Backend  string   `json:"backend"`
	Every    string   `json:"every,omitempty"`
	At       string   `json:"at,omitempty"`
	Instance string   `json:"instance"`
	Command  []string `json:"command"`
	Next     string   `json:"next"` // RFC 3339, or as the scheduler reports it; "" when unknown
	Unit     string   `json:"unit,omitempty"`
	Added    string   `json:"added,omitempty"` // when the schedule was made, RFC 3339; "" when not recorded
	Task     string   `json:"task,omitempty"`  // TaskBackup for the backup schedule; "" for a playbook's

	job Job
}

func (j Job) entry(backend string) Entry {
	m := j.meta()
	return Entry{Playbook: j.Playbook, Backend: backend, Every: m.Every, At: m.At, Instance: j.Instance, Command: j.Command(),
		Added: m.Added, Task: j.Task, job: j}
}

// Result says what Add did.
type Result struct {
	Changed  bool   `json:"changed"`  // false: the same schedule was there already
	Replaced string `json:"replaced"` // the previous schedule ("every 1h") when it was different
	Next     string `json:"next"`
	Backend  string `json:"backend"`
}

// Backend is a scheduler.
type Backend interface {
	Name() string
	Add(j Job) (Result, error)
	// Remove removes the schedule of playbook; false when there was none.
	Remove(playbook string) (bool, error)
	List() ([]Entry, error)
}

// Options configure the backends; Detect fills the defaults.
type Options struct {
	Scheduler string // "systemd", "cron" or "" to detect (HOBBS_SCHEDULER)
	Systemctl string // the systemctl command (HOBBS_SYSTEMCTL, default systemctl)
	Crontab   string // the crontab command (HOBBS_CRONTAB, default crontab)
	UnitDir   string // default $XDG_CONFIG_HOME/systemd/user
	LockPath  string // default $XDG_STATE_HOME/hobbs/schedule.lock
	// ProcDir is where CanFire looks for a cron daemon's process
	// (HOBBS_PROC, default /proc).
	ProcDir string
	// StatePath is where the missed runs already reported are kept
	// (default $XDG_STATE_HOME/hobbs/missed-runs.json).
	StatePath string
	Now       func() time.Time
	Audit     *audit.Logger // where Add and Remove record their changes; nil: nowhere
	// InContainer refuses every scheduler: schedules live on the host, not
	// in the agent's container (HOBBS_CONTEXT=container).
	InContainer bool
}

// OptionsFromEnv reads the options from the environment; changes are
// recorded in log.
func OptionsFromEnv(log *audit.Logger) Options {
	return Options{Scheduler: os.Getenv("HOBBS_SCHEDULER"), Systemctl: os.Getenv("HOBBS_SYSTEMCTL"), Crontab: os.Getenv("HOBBS_CRONTAB"),
		ProcDir: os.Getenv("HOBBS_PROC"), Audit: log, InContainer: os.Getenv("HOBBS_CONTEXT") == "container"}
}

func (o *Options) fill() error {
	home, _ := os.UserHomeDir()
	xdg := func(env, def string) (string, error) {
		if v := os.Getenv(env); filepath.IsAbs(v) {
			return v, nil
		}
		if home == "" {
			return "", errs.Failf("$HOME is not set: cannot find %s", def)
		}
		return filepath.Join(home, def), nil
	}
	if o.Systemctl == "" {
		o.Systemctl = "systemctl"
	}
	if o.Crontab == "" {
		o.Crontab = "crontab"
	}
	if o.UnitDir == "" {
		d, err := xdg("XDG_CONFIG_HOME", ".config")
		if err != nil {
			return err
		}
		o.UnitDir = filepath.Join(d, "systemd", "user")
	}
	if o.LockPath == "" || o.StatePath == "" {
		d, err := xdg("XDG_STATE_HOME", filepath.Join(".local", "state"))
		if err != nil {
			return err
		}
		if o.LockPath == "" {
			o.LockPath = filepath.Join(d, "hobbs", "schedule.lock")
		}
		if o.StatePath == "" {
			o.StatePath = filepath.Join(d, "hobbs", "missed-runs.json")
		}
	}
	if o.ProcDir == "" {
		o.ProcDir = "/proc"
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return nil
}

// Detect returns the backend: o.Scheduler when set, else systemd when a
// systemd user manager runs for this user (its runtime directory exists
// and systemctl --user is-system-running answers running or degraded),
// else cron. Its changes are recorded in o.Audit.
func Detect(o Options) (Backend, error) {
	if o.InContainer {
		return nil, errs.Usagef("schedules live on the host").Advise(OnTheHost)
	}
	if err := o.fill(); err != nil {
		return nil, err
	}
	var b Backend
	switch o.Scheduler {
	case "systemd":
		b = &systemd{o}
	case "cron":
		b = &cron{o}
	case "":
		b = &cron{o}
		if systemdRuns(o) {
			b = &systemd{o}
		}
	default:
		return nil, errs.Usagef("HOBBS_SCHEDULER=%s: expected systemd or cron", o.Scheduler)
	}
	return audited{b, o.Audit}, nil
}

// audited records a backend's changes in the audit log.
type audited struct {
	Backend
	log *audit.Logger
}

func (a audited) Add(j Job) (Result, error) {
	res, err := a.Backend.Add(j)
	if res.Changed || err != nil {
		a.log.Record(audit.Entry{Event: "schedule.add", Subject: j.Playbook,
			Detail: map[string]any{"when": j.Spec.String(), "backend": a.Name(), "replaced": res.Replaced}}, err)
	}
	return res, err
}

func (a audited) Remove(playbook string) (bool, error) {
	removed, err := a.Backend.Remove(playbook)
	if removed || err != nil {
		a.log.Record(audit.Entry{Event: "schedule.rm", Subject: playbook, Detail: map[string]any{"backend": a.Name()}}, err)
	}
	return removed, err
}

func systemdRuns(o Options) bool {
	dir := os.Getenv("XDG_RUNTIME_DIR")
	if dir == "" {
		dir = fmt.Sprintf("/run/user/%d", os.Getuid())
	}
	if fi, err := os.Stat(filepath.Join(dir, "systemd")); err != nil || !fi.IsDir() {
		return false
	}
	out, _ := exec.Command(o.Systemctl, "--user", "is-system-running").Output()
	switch strings.TrimSpace(string(out)) {
	case "running", "degraded", "starting", "initializing":
		return true
	}
	return false
}

// run runs a command and returns its stdout; the error carries its stderr.
func run(stdin []byte, name string, args ...string) ([]byte, error) {
	cmd := exec.Command(name, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return stdout.Bytes(), &cmdError{cmd: name + " " + strings.Join(args, " "), msg: msg, err: err}
	}
	return stdout.Bytes(), nil
}

type cmdError struct {
	cmd, msg string
	err      error
}

func (e *cmdError) Error() string { return e.cmd + ": " + e.msg }
func (e *cmdError) Unwrap() error { return e.err }

// nextRun is the next time the calendar of j comes after now, as RFC 3339;
// "" when it is not a calendar this package computes.
func nextRun(j Job, now time.Time) string {
	var c calendar
	var err error
	if j.Spec.At != "" {
		c, err = parseCalendar(j.Spec.At)
	} else {
		var ok bool
		if c, _, ok = everyCalendar(j.Spec.Every); !ok {
			return ""
		}
	}
	if err != nil {
		return ""
	}
	if t := c.next(now); !t.IsZero() {
		return t.Format(time.RFC3339)
	}
	return ""
}

// cronSchedule returns the five cron fields for s, or an error that says
// why cron cannot express it and what would do.
func cronSchedule(s Spec) (string, error) {
	if s.At != "" {
		c, err := parseCalendar(s.At)
		if err != nil {
			return "", errs.Usagef("cron cannot run --at %v", err).
				Advise(CronCalendar)
		}
		return c.cron(), nil
	}
	c, _, ok := everyCalendar(s.Every)
	if !ok {
		var near []string
		for _, d := range nearestIntervals(s.Every) {
			near = append(near, "--every "+FormatDuration(d))
		}
		return "", errs.Usagef("cron cannot run every %s: it runs on the clock, and %s does not divide an hour or a day",
			FormatDuration(s.Every), FormatDuration(s.Every)).
			Advise(CronInterval, "near", strings.Join(near, " or "))
	}
	return c.cron(), nil
}

// validName keeps a playbook name usable in unit file names and crontab
// lines (playbook.ValidName is stricter).
func validName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

func checkJob(j Job) error {
	if !validName(j.Playbook) {
		return errs.Usagef("invalid playbook name %q", j.Playbook)
	}
	if !filepath.IsAbs(j.Binary) || !filepath.IsAbs(j.Instance) {
		return errs.Failf("the hobbs binary and the instance need absolute paths (%q, %q)", j.Binary, j.Instance)
	}
	if strings.ContainsAny(j.Binary+j.Instance, "\r\n") {
		return errs.Usagef("a path with a line break cannot go into a schedule")
	}
	return j.Spec.Check()
}

// UserSystemd reports whether a systemd user manager takes this user's
// units (as Detect decides: o.Scheduler, else one answering), the
// directory of those units (NoUserManager advises when there is none). hobbs
// serve install uses it too.
func UserSystemd(o Options) (unitDir string, ok bool, err error) {
	if err := o.fill(); err != nil {
		return "", false, err
	}
	return o.UnitDir, o.Scheduler == "systemd" || o.Scheduler == "" && systemdRuns(o), nil
}
