package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"strings"
	"time"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/backup"
	"github.com/hobbs-agent/hobbs/src/channel"
	"github.com/hobbs-agent/hobbs/src/schedule"
	"github.com/hobbs-agent/hobbs/src/task"
)

// Never silent: besides the runs it starts, the service delivers the end
// of every other headless run of the instance — a schedule's, or one
// started by hand — and every schedule that missed its run (each
// WatchInterval, and at start). Which runs ended, and how, it reads from
// the host's audit log (logs/audit.log, which no session mounts: the
// task.done lines a host process wrote), never from the task log, whose
// records a session can write; the turns, cost and report lines come from
// the task's record. watch.json keeps how far the audit log was read, so a
// restart delivers what ended while the service was down and nothing
// twice; the first start delivers nothing from before it. Missed runs are
// reported once per outage (schedule.MissedRuns, with a state of the
// service's own, so the host's commands report them too); so is a backup
// that failed or is overdue (backup.Tell).

// WatchInterval is how often the service looks for ended runs and missed
// schedules.
const WatchInterval = time.Minute

// watchFile is how far the service has read the host's audit log.
type watchFile struct {
	Offset  int64 `json:"offset"`
	Started bool  `json:"started"`
}

// maxWatchRead bounds what one look reads of the audit log.
const maxWatchRead = 16 << 20

// watch delivers ended runs and missed schedules until ctx ends.
func (s *Service) watch(ctx context.Context) {
	for {
		s.watchOnce()
		select {
		case <-ctx.Done():
			return
		case <-time.After(WatchInterval):
		}
	}
}

// watchOnce delivers what ended and what missed since the last look.
func (s *Service) watchOnce() {
	now := s.opt.Now().UTC()
	var w watchFile
	if err := s.st.read("watch.json", &w); err != nil {
		s.logf("watch: %v", err)
		return
	}
	ended, next, err := s.endedRuns(w.Offset, !w.Started)
	if err != nil {
		s.logf("watch: %v", err)
		return
	}
	w.Offset, w.Started = next, true
	for _, e := range ended {
		if s.ranHere(e.Subject) {
			continue // delivered by runJob
		}
		s.deliver(auditNotice(e, s.opt.Tasks))
	}
	if err := s.st.write("watch.json", w); err != nil {
		s.logf("watch: %v", err)
	}
	o := schedule.OptionsFromEnv(nil)
	o.StatePath = s.st.path("missed.json")
	for _, m := range schedule.MissedRuns(o, now) {
		if m.Instance != s.opt.Instance.Root {
			continue
		}
		s.deliver(channel.Notice{ID: "missed:" + m.Playbook + ":" + m.Missed, Text: "Missed: " + m.MissedLine() + ".\n\n" + schedule.MissedHint})
	}
	// A failed or overdue backup of the instance, once (its own record of
	// what it told: the host's commands tell it too).
	if al, ok := backup.Tell(s.opt.Instance, now, s.st.path("backup-told.json")); ok {
		s.deliver(channel.Notice{ID: "backup:" + al.ID, Text: "Backup: " + al.Line + ".\n\nhobbs doctor shows the last good backup; hobbs backup runs one now (docs/backup.md)."})
	}
}

// ranHere reports whether task id is a run this service started.
func (s *Service) ranHere(id string) bool {
	_, ok := s.q.find(id)
	return ok
}

// endedRuns returns the task.done lines of headless runs a host process
// wrote in the audit log from offset on, and the offset after the last
// whole line. skip (the first look) returns none and the log's end.
func (s *Service) endedRuns(offset int64, skip bool) ([]audit.Entry, int64, error) {
	f, err := s.opt.Instance.FS().Open(s.opt.Instance.AuditLog())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, offset, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, offset, err
	}
	if skip || fi.Size() < offset { // the first look, or a new log
		if skip {
			return nil, fi.Size(), nil
		}
		offset = 0
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, offset, err
	}
	data, err := io.ReadAll(io.LimitReader(f, maxWatchRead))
	if err != nil {
		return nil, offset, err
	}
	whole := bytes.LastIndexByte(data, '\n') + 1
	if whole == 0 && len(data) == maxWatchRead {
		whole = len(data) // one line longer than a look: not a task's
	}
	var out []audit.Entry
	for _, line := range bytes.Split(data[:whole], []byte("\n")) {
		var e audit.Entry
		if json.Unmarshal(line, &e) != nil || e.Event != "task.done" || !strings.HasPrefix(e.Actor, "host:") || task.ValidID(e.Subject) != nil {
			continue
		}
		if title, _ := e.Detail["title"].(string); strings.HasPrefix(title, task.RunTitle("")) {
			out = append(out, e)
		}
	}
	return out, offset + int64(whole), nil
}

// auditNotice is the notice of the end of a run the service did not
// start: the outcome and the review from the host's audit line, the turns,
// cost and first report lines from the task's record when it reads.
func auditNotice(e audit.Entry, tasks task.Log) channel.Notice {
	pb, _ := e.Detail["playbook"].(string)
	outcome, _ := e.Detail["outcome"].(string)
	review, _ := e.Detail["review"].(string)
	var turns int
	var cost float64
	var body string
	if t, err := tasks.Get(e.Subject); err == nil {
		turns, cost, body = t.Turns, t.CostUSD, t.Body
	}
	return runNotice(e.Subject, pb+": "+outcome, turns, cost, body, review == task.ReviewPending)
}
