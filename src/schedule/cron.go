package schedule

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// The markers of hobbs's block in the crontab.
const (
	cronBegin = "# BEGIN hobbs schedules (hobbs schedule add/rm change this block)"
	cronEnd   = "# END hobbs schedules"
)

// cron schedules with the user's crontab.
type cron struct{ o Options }

func (c *cron) Name() string { return "cron" }

// shellQuote quotes one argument for /bin/sh, and escapes % (a newline in
// a crontab command).
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, "'", `'\''`), "%", `\%`) + "'"
}

// CronLines returns the two crontab lines of j: its metadata comment and
// the schedule.
func CronLines(j Job) ([]string, error) {
	if err := checkJob(j); err != nil {
		return nil, err
	}
	when, err := cronSchedule(j.Spec)
	if err != nil {
		return nil, err
	}
	var args []string
	for _, a := range j.Command() {
		args = append(args, shellQuote(a))
	}
	return []string{j.metaLine(), when + " " + strings.Join(args, " ")}, nil
}

// crontab is the user's crontab split around hobbs's block.
type crontab struct {
	before, after []string // lines outside the block, as they are
	jobs          []Job
	lines         map[string][]string // playbook → its two lines
}

func (c *cron) read() (*crontab, error) {
	out, err := run(nil, c.o.Crontab, "-l")
	if err != nil {
		var ce *cmdError
		if errors.As(err, &ce) && strings.Contains(strings.ToLower(ce.msg), "no crontab") {
			out = nil
		} else {
			return nil, (&errs.Error{Code: errs.Failure, Msg: "read the crontab", Err: err}).Advise(NoCrontab)
		}
	}
	return parseCrontab(string(out))
}

func parseCrontab(text string) (*crontab, error) {
	t := &crontab{lines: map[string][]string{}}
	if text == "" {
		return t, nil
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	damaged := func(i int, why string) (*crontab, error) {
		return nil, errs.Failf("crontab line %d: %s; the crontab was not changed", i+1, why).
			Advise(DamagedBlock, "begin", strconv.Quote(cronBegin), "end", strconv.Quote(cronEnd))
	}
	state := 0 // 0 before, 1 in the block, 2 after
	var pending *Job
	for i, l := range lines {
		trimmed := strings.TrimSpace(l)
		switch {
		case trimmed == cronBegin:
			if state != 0 {
				return damaged(i, "a second hobbs block")
			}
			state = 1
			// The blank line render puts before the block belongs to it.
			if n := len(t.before); n > 0 && strings.TrimSpace(t.before[n-1]) == "" {
				t.before = t.before[:n-1]
			}
		case trimmed == cronEnd:
			if state != 1 {
				return damaged(i, "the end of hobbs's block without its beginning")
			}
			if pending != nil {
				return damaged(i, "a schedule without its cron line")
			}
			state = 2
		case state == 0:
			t.before = append(t.before, l)
		case state == 2:
			t.after = append(t.after, l)
		case trimmed == "":
		case pending == nil:
			j, ok := parseMetaLine(l)
			if !ok {
				return damaged(i, "unexpected line in hobbs's block")
			}
			if _, dup := t.lines[j.Playbook]; dup {
				return damaged(i, fmt.Sprintf("playbook %s scheduled twice", j.Playbook))
			}
			pending = &j
			t.lines[j.Playbook] = []string{l}
		default:
			if strings.HasPrefix(trimmed, "#") {
				return damaged(i, "a schedule without its cron line")
			}
			t.lines[pending.Playbook] = append(t.lines[pending.Playbook], l)
			t.jobs = append(t.jobs, *pending)
			pending = nil
		}
	}
	if state == 1 {
		return damaged(len(lines)-1, "hobbs's block has no end")
	}
	return t, nil
}

func (t *crontab) render() string {
	var out []string
	out = append(out, t.before...)
	if len(t.jobs) > 0 {
		if len(out) > 0 && strings.TrimSpace(out[len(out)-1]) != "" {
			out = append(out, "")
		}
		out = append(out, cronBegin)
		sort.Slice(t.jobs, func(i, k int) bool { return t.jobs[i].Playbook < t.jobs[k].Playbook })
		for _, j := range t.jobs {
			out = append(out, t.lines[j.Playbook]...)
		}
		out = append(out, cronEnd)
	}
	out = append(out, t.after...)
	if len(out) == 0 {
		return ""
	}
	return strings.Join(out, "\n") + "\n"
}

func (c *cron) write(t *crontab) error {
	if _, err := run([]byte(t.render()), c.o.Crontab, "-"); err != nil {
		return errs.Wrap(errs.Failure, err, "install the crontab")
	}
	return nil
}

func (c *cron) lock() (func(), error) { return lockSchedules(c.o.LockPath) }

// lockSchedules takes the lock every change of schedules holds.
func lockSchedules(path string) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, errs.Wrap(errs.Failure, err, "create the schedule lock's directory")
	}
	unlock, err := safefile.Lock(path, 30*time.Second)
	if err != nil {
		return nil, errs.Wrap(errs.Timeout, err, "schedules are busy")
	}
	return unlock, nil
}

func (c *cron) Add(j Job) (Result, error) {
	res := Result{Backend: c.Name()}
	if _, err := CronLines(j); err != nil {
		return res, err
	}
	unlock, err := c.lock()
	if err != nil {
		return res, err
	}
	defer unlock()
	t, err := c.read()
	if err != nil {
		return res, err
	}
	for _, o := range t.jobs {
		if o.Playbook == j.Playbook && o.Spec == j.Spec && o.Instance == j.Instance && o.Binary == j.Binary {
			j.Added = o.Added // the same schedule: made when it was first
		}
	}
	lines, err := CronLines(j)
	if err != nil {
		return res, err
	}
	res.Next = nextRun(j, c.o.Now())
	if old, ok := t.lines[j.Playbook]; ok {
		if strings.Join(old, "\n") == strings.Join(lines, "\n") {
			return res, nil
		}
		for i, o := range t.jobs {
			if o.Playbook == j.Playbook {
				res.Replaced = o.Spec.String()
				t.jobs = append(t.jobs[:i], t.jobs[i+1:]...)
				break
			}
		}
	}
	t.jobs = append(t.jobs, j)
	t.lines[j.Playbook] = lines
	res.Changed = true
	return res, c.write(t)
}

func (c *cron) Remove(name string) (bool, error) {
	if !validName(name) {
		return false, errs.Usagef("invalid playbook name %q", name)
	}
	unlock, err := c.lock()
	if err != nil {
		return false, err
	}
	defer unlock()
	t, err := c.read()
	if err != nil {
		return false, err
	}
	for i, o := range t.jobs {
		if o.Playbook == name {
			t.jobs = append(t.jobs[:i], t.jobs[i+1:]...)
			delete(t.lines, name)
			return true, c.write(t)
		}
	}
	return false, nil
}

func (c *cron) List() ([]Entry, error) {
	t, err := c.read()
	if err != nil {
		return nil, err
	}
	out := []Entry{}
	for _, j := range t.jobs {
		e := j.entry(c.Name())
		e.Next = nextRun(j, c.o.Now())
		out = append(out, e)
	}
	sort.Slice(out, func(i, k int) bool { return out[i].Playbook < out[k].Playbook })
	return out, nil
}
