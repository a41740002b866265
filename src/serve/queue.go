package serve

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/task"
)

// The run queue is held in memory and kept on disk one file per job
// (serve/jobs/ID.json, written atomically), the event of a waiting run
// inside its job's file: accepting a delivery writes one small file, the
// same with ten jobs on disk or ten thousand, and a crash leaves each job
// as it was or as it became. A run's task record is made when the run
// starts, not when it is queued, so a delivery that never runs leaves no
// task. Finished jobs are kept (the latest keepDone) for /runs and for
// telling the service's own runs apart; older ones are removed.
//
// A queue written by an older hobbs (serve/queue.json and serve/events/,
// the task made at queueing) is converted when the service starts: each
// job becomes its file, with its event and its task, then queue.json is
// renamed queue.json.converted and the event files removed.

// Job states.
const (
	Queued  = "queued"
	Running = "running"
	Done    = "done"
)

// Job is one triggered run in the queue.
type Job struct {
	// ID names the job from its queueing on (JobIDs); Task is the run's
	// task, from its start.
	ID       string `json:"id"`
	Task     string `json:"task,omitempty"`
	Trigger  string `json:"trigger"`
	Source   string `json:"source"`
	Playbook string `json:"playbook"`
	Key      string `json:"key"` // debounce key (Event.Key)
	// Sender is who sent the delivery (Event.Sender; a mail trigger's From
	// address); Owner: the trigger's owner (not limited per sender, its own
	// lane of the queue).
	Sender string `json:"sender,omitempty"`
	// Seq counts the jobs this queue was given, in the order they came.
	Seq    uint64    `json:"seq,omitempty"`
	Owner  bool      `json:"owner,omitempty"`
	State  string    `json:"state"`
	Queued time.Time `json:"queued"`
	// NotBefore is when the run may start: the end of its debounce window.
	NotBefore time.Time `json:"not_before"`
	// Deliveries are the delivery ids this run stands for (one, or those
	// debounce folded into it); Event holds the latest, until the run ends.
	Deliveries []string        `json:"deliveries"`
	Event      json.RawMessage `json:"event,omitempty"`
	Started    *time.Time      `json:"started,omitempty"`
	Finished   *time.Time      `json:"finished,omitempty"`
	Outcome    string          `json:"outcome,omitempty"`
	Note       string          `json:"note,omitempty"`
}

// keepDone is how many finished jobs the queue keeps (hobbs serve's /runs).
const keepDone = 20

// jobIDRe is a job's id: a new one (newJobID), or the task id of a job
// converted from an older hobbs's queue.
var jobIDRe = regexp.MustCompile(`^(job_\d{8}T\d{6}_[0-9a-f]{8}|task_\d{8}_\d{3,6})$`)

// newJobID names a new job: when it was queued and 32 random bits.
func newJobID(now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "job_" + now.UTC().Format("20060102T150405") + "_" + hex.EncodeToString(b[:])
}

// queue is the jobs of one service, in memory, each write also in its file.
type queue struct {
	st   store
	mu   sync.Mutex
	jobs map[string]*Job
	seq  uint64 // the last Job.Seq given
}

// before orders jobs as they were queued: by time, then by Seq (two
// deliveries can carry the same clock reading), then by id.
func before(a, b *Job) bool {
	if !a.Queued.Equal(b.Queued) {
		return a.Queued.Before(b.Queued)
	}
	if a.Seq != b.Seq {
		return a.Seq < b.Seq
	}
	return a.ID < b.ID
}

func (s store) jobsDir() string          { return filepath.Join(s.in.Serve(), "jobs") }
func (s store) jobPath(id string) string { return filepath.Join(s.jobsDir(), id+".json") }

// save writes j's file (the caller holds q.mu).
func (q *queue) save(j *Job) error {
	b, err := json.Marshal(j)
	if err != nil {
		return err
	}
	if err := q.st.fs().MkdirAll(q.st.jobsDir(), 0o700); err != nil {
		return err
	}
	return q.st.fs().Write(q.st.jobPath(j.ID), append(b, '\n'), 0o600)
}

// loadQueue reads the jobs on disk, converting an older hobbs's queue
// first. A job file that does not parse is reported (problems) and left
// as it is.
func loadQueue(st store) (*queue, []string, error) {
	q := &queue{st: st, jobs: map[string]*Job{}}
	if err := q.convert(); err != nil {
		return nil, nil, err
	}
	ents, err := st.fs().ReadDir(st.jobsDir())
	if errors.Is(err, fs.ErrNotExist) {
		return q, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var problems []string
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !jobIDRe.MatchString(id) {
			continue // a temporary file, or not a job's
		}
		j, err := readJob(st, id)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		q.jobs[id] = j
		q.seq = max(q.seq, j.Seq)
	}
	return q, problems, nil
}

// readJob reads one job's file.
func readJob(st store, id string) (*Job, error) {
	rel := st.in.Rel(st.jobPath(id))
	b, err := st.fs().ReadFile(st.jobPath(id), instance.MaxServeFile)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", rel, err)
	}
	var j Job
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, fmt.Errorf("%s: %v; hobbs serve leaves it as it is: move it aside", rel, err)
	}
	if j.ID != id {
		return nil, fmt.Errorf("%s: names job %q; hobbs serve leaves it as it is: move it aside", rel, j.ID)
	}
	switch {
	case j.State != Queued && j.State != Running && j.State != Done:
		return nil, fmt.Errorf("%s: unknown state %q; hobbs serve leaves it as it is: move it aside", rel, j.State)
	case j.State == Done && j.Finished == nil:
		return nil, fmt.Errorf("%s: done without an end time; hobbs serve leaves it as it is: move it aside", rel)
	}
	return &j, nil
}

// oldQueue is serve/queue.json as an older hobbs wrote it: every job
// named by its task, made when it was queued; the events in serve/events.
type oldQueue struct {
	Jobs []*Job `json:"jobs"`
}

// convert turns an older hobbs's queue.json into job files: a job keeps
// its task as its id, takes in its event file, and queue.json is renamed
// queue.json.converted. Done again after a crash midway, it writes the
// same files.
func (q *queue) convert() error {
	unlock, err := q.st.lock("queue")
	if err != nil {
		return err
	}
	defer unlock()
	var old oldQueue
	if _, err := q.st.fs().Stat(q.st.path("queue.json")); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := q.st.read("queue.json", &old); err != nil {
		return err
	}
	var events []string
	for _, j := range old.Jobs {
		if j == nil || task.ValidID(j.Task) != nil {
			return fmt.Errorf("%s: a job without a task id; hobbs serve leaves it as it is: move it aside to start afresh", q.st.in.Rel(q.st.path("queue.json")))
		}
		j.ID = j.Task
		if j.State != Done {
			ev, err := q.st.readEvent(j.Task)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			j.Event = ev
			events = append(events, j.Task)
		}
		if err := q.save(j); err != nil {
			return err
		}
	}
	if err := q.st.fs().Rename(q.st.path("queue.json"), q.st.path("queue.json.converted")); err != nil {
		return err
	}
	for _, id := range events {
		q.st.removeEvent(id)
	}
	return nil
}

// list returns copies of the jobs, oldest queued first.
func (q *queue) list() []Job {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]Job, 0, len(q.jobs))
	for _, j := range q.jobs {
		c := *j
		c.Event = nil
		out = append(out, c)
	}
	sort.Slice(out, func(a, b int) bool { return before(&out[a], &out[b]) })
	return out
}

// find returns the job named id, by its job id or its task id.
func (q *queue) find(id string) (Job, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if j := q.lookup(id); j != nil {
		return *j, true
	}
	return Job{}, false
}

// lookup is the job named id, by its job id or its task id, or nil (the
// caller holds q.mu).
func (q *queue) lookup(id string) *Job {
	if j, ok := q.jobs[id]; ok {
		return j
	}
	for _, j := range q.jobs {
		if j.Task == id && id != "" {
			return j
		}
	}
	return nil
}

// drop finishes the job named id (by its job or task id) as outcome if it
// is still queued, in one hold of q.mu: the scheduler cannot start it
// between the look and the finish. It returns the job as it was: State
// Queued when drop finished it, Running when it runs (startReady records
// its run in Service.running before it lets go of q.mu), Done when it had
// ended.
func (q *queue) drop(id, outcome, note string, at time.Time) (Job, bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	j := q.lookup(id)
	if j == nil {
		return Job{}, false, nil
	}
	was := *j
	if j.State != Queued {
		return was, true, nil
	}
	return was, true, q.finishLocked(j, outcome, note, at)
}

// update runs fn on job id under the lock and writes the job when fn
// reports a change.
func (q *queue) update(id string, fn func(j *Job) bool) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	j, ok := q.jobs[id]
	if !ok {
		return fmt.Errorf("no job %s", id)
	}
	if !fn(j) {
		return nil
	}
	return q.save(j)
}

// finish records job id's end and forgets the oldest finished jobs beyond
// keepDone.
func (q *queue) finish(id, outcome, note string, at time.Time) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	j, ok := q.jobs[id]
	if !ok {
		return fmt.Errorf("no job %s", id)
	}
	return q.finishLocked(j, outcome, note, at)
}

// finishLocked is finish of job j (the caller holds q.mu). A job ends
// once: the end of a job already finished is refused and the first kept.
func (q *queue) finishLocked(j *Job, outcome, note string, at time.Time) error {
	if j.State == Done {
		return fmt.Errorf("job %s: finished already (%s), not again as %s", j.ID, j.Outcome, outcome)
	}
	at = at.UTC()
	j.State, j.Finished, j.Outcome, j.Note, j.Event = Done, &at, outcome, note, nil
	if err := q.save(j); err != nil {
		return err
	}
	var done []*Job
	for _, j := range q.jobs {
		if j.State == Done {
			done = append(done, j)
		}
	}
	if len(done) <= keepDone {
		return nil
	}
	sort.Slice(done, func(a, b int) bool { return done[a].Finished.Before(*done[b].Finished) })
	for _, j := range done[:len(done)-keepDone] {
		if err := q.st.fs().Remove(q.st.jobPath(j.ID)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		delete(q.jobs, j.ID)
	}
	return nil
}

// counts are the waiting and running jobs: in all, of trigger, and of
// trigger's owner.
type counts struct {
	waiting, running                 int
	trigger, triggerOwner, strangers int
}

// count counts the jobs for trigger (the caller holds q.mu).
func (q *queue) count(trigger string) counts {
	var c counts
	for _, j := range q.jobs {
		switch j.State {
		case Running:
			c.running++
		case Queued:
			c.waiting++
			if !j.Owner {
				c.strangers++
			}
			if j.Trigger == trigger {
				if j.Owner {
					c.triggerOwner++
				} else {
					c.trigger++
				}
			}
		}
	}
	return c
}
