package serve

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/instance"
)

// The queue at a glance, for /status and hobbs serve status: the runs
// waiting and running, each trigger's, and the deliveries shed in the last
// hour. The service keeps its shed counts per minute in serve/shed.json
// (written within a second of a change) so that another process, and the
// next start, read them.

// QueueStatus is the queue at a glance.
type QueueStatus struct {
	Waiting  int `json:"waiting"`
	Running  int `json:"running"`
	MaxQueue int `json:"max_queue"`
	MaxRuns  int `json:"max_runs"`
	// Shed is the deliveries shed in the last hour.
	Shed     int             `json:"shed_last_hour"`
	Triggers []TriggerStatus `json:"triggers"`
	Jobs     []JobStatus     `json:"jobs"`
}

// TriggerStatus is one trigger's part of the queue.
type TriggerStatus struct {
	Name      string `json:"name"`
	Waiting   int    `json:"waiting"`
	Running   int    `json:"running"`
	MaxQueue  int    `json:"max_queue"`
	PerSender int    `json:"per_sender"`
	Shed      int    `json:"shed_last_hour"`
}

// JobStatus is a waiting or running job.
type JobStatus struct {
	ID       string    `json:"id"`
	Task     string    `json:"task,omitempty"`
	Trigger  string    `json:"trigger"`
	Playbook string    `json:"playbook"`
	Sender   string    `json:"sender,omitempty"`
	State    string    `json:"state"`
	Queued   time.Time `json:"queued"`
}

// shedFile is serve/shed.json: per trigger, the shed deliveries of each
// minute of the last hour (by the minute's Unix time / 60) and when the
// owner was last told.
type shedFile struct {
	Triggers map[string]shedRecord `json:"triggers"`
}

type shedRecord struct {
	Minutes    map[string]int `json:"minutes"`
	LastNotice time.Time      `json:"last_notice,omitzero"`
}

// saveShed writes the shed counts when they changed.
func (s *Service) saveShed(now time.Time) {
	s.lim.mu.Lock()
	if !s.lim.dirty {
		s.lim.mu.Unlock()
		return
	}
	f := shedFile{Triggers: map[string]shedRecord{}}
	for name, t := range s.lim.shed {
		r := shedRecord{Minutes: map[string]int{}, LastNotice: t.lastNotice}
		for m, n := range t.minutes {
			r.Minutes[strconv.FormatInt(m, 10)] = n
		}
		f.Triggers[name] = r
	}
	s.lim.dirty = false
	s.lim.mu.Unlock()
	if err := s.st.write("shed.json", f); err != nil {
		s.logf("shed counts: %v", err)
	}
}

// loadShed takes back the shed counts a previous service left.
func (s *Service) loadShed() error {
	var f shedFile
	if err := s.st.read("shed.json", &f); err != nil {
		return err
	}
	for name, r := range f.Triggers {
		t := &shedTally{minutes: map[int64]int{}, lastNotice: r.LastNotice}
		for m, n := range r.Minutes {
			if v, err := strconv.ParseInt(m, 10, 64); err == nil {
				t.minutes[v] = n
			}
		}
		s.lim.shed[name] = t
	}
	return nil
}

// since counts a shed file's deliveries in the hour before now.
func (f shedFile) since(now time.Time) map[string]int {
	out := map[string]int{}
	for name, r := range f.Triggers {
		for m, n := range r.Minutes {
			if v, err := strconv.ParseInt(m, 10, 64); err == nil && now.Sub(time.Unix(v*60, 0)) < shedWindow {
				out[name] += n
			}
		}
	}
	return out
}

// makeStatus sums jobs and shed counts up for cfg.
func makeStatus(cfg *config.Config, jobs []Job, shed map[string]int) QueueStatus {
	st := QueueStatus{MaxQueue: cfg.Serve.QueueBound(), MaxRuns: cfg.Serve.MaxRuns, Jobs: []JobStatus{}}
	by := map[string]*TriggerStatus{}
	for _, name := range cfg.TriggerNames() {
		t := cfg.Triggers[name]
		st.Triggers = append(st.Triggers, TriggerStatus{Name: name, MaxQueue: t.QueueBound(), PerSender: t.SenderBound(), Shed: shed[name]})
	}
	for i := range st.Triggers {
		by[st.Triggers[i].Name] = &st.Triggers[i]
	}
	for _, n := range shed {
		st.Shed += n
	}
	for _, j := range jobs {
		t := by[j.Trigger]
		switch j.State {
		case Queued:
			st.Waiting++
			if t != nil {
				t.Waiting++
			}
		case Running:
			st.Running++
			if t != nil {
				t.Running++
			}
		default:
			continue
		}
		st.Jobs = append(st.Jobs, JobStatus{ID: j.ID, Task: j.Task, Trigger: j.Trigger, Playbook: j.Playbook, Sender: j.Sender, State: j.State, Queued: j.Queued})
	}
	return st
}

// ReadStatus is the queue of instance in, as the service left it on disk:
// for hobbs serve status, whether the service runs or not. problems are
// the job files that do not parse (left as they are).
func ReadStatus(in instance.Instance, cfg *config.Config, now time.Time) (QueueStatus, []string, error) {
	st := store{in: in}
	q := &queue{st: st, jobs: map[string]*Job{}}
	var problems []string
	ents, err := st.fs().ReadDir(st.jobsDir())
	if err == nil {
		for _, e := range ents {
			id, ok := strings.CutSuffix(e.Name(), ".json")
			if !ok || !jobIDRe.MatchString(id) {
				continue
			}
			j, err := readJob(st, id)
			if err != nil {
				problems = append(problems, err.Error())
				continue
			}
			q.jobs[id] = j
		}
	}
	jobs := q.list()
	if _, err := st.fs().Stat(st.path("queue.json")); err == nil {
		var old oldQueue
		if err := st.read("queue.json", &old); err != nil {
			return QueueStatus{}, problems, err
		}
		for _, j := range old.Jobs {
			if j != nil {
				c := *j
				c.ID = c.Task
				jobs = append(jobs, c)
			}
		}
	}
	var f shedFile
	if err := st.read("shed.json", &f); err != nil {
		return QueueStatus{}, problems, err
	}
	return makeStatus(cfg, jobs, f.since(now)), problems, nil
}

// status is the queue this service holds.
func (s *Service) status() QueueStatus {
	return makeStatus(s.opt.Config, s.q.list(), s.lim.shedLastHour(s.opt.Now()))
}

// Text is the status in lines: the totals, each trigger with waiting runs
// or shed deliveries, then each running and waiting job.
func (st QueueStatus) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d running (at most %d at once), %d waiting (at most %d), %d shed in the last hour",
		st.Running, st.MaxRuns, st.Waiting, st.MaxQueue, st.Shed)
	for _, t := range st.Triggers {
		if t.Waiting+t.Running+t.Shed == 0 {
			continue
		}
		fmt.Fprintf(&b, "\ntrigger %s: %d running, %d waiting (at most %d), %d shed in the last hour (per sender: %d an hour)",
			t.Name, t.Running, t.Waiting, t.MaxQueue, t.Shed, t.PerSender)
	}
	jobs := append([]JobStatus(nil), st.Jobs...)
	sort.SliceStable(jobs, func(a, b int) bool { return jobs[a].State == Running && jobs[b].State != Running })
	for _, j := range jobs {
		name := j.ID
		if j.Task != "" {
			name = j.Task
		}
		fmt.Fprintf(&b, "\n%s: %s %s (trigger %s)", j.State, name, j.Playbook, j.Trigger)
		if j.Sender != "" {
			fmt.Fprintf(&b, " from %s", j.Sender)
		}
	}
	return b.String()
}
