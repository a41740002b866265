// Package serve is hobbs serve: the long-running host service that turns
// signed webhooks into headless playbook runs and tells the owner how they
// ended. It owns the webhook listener (POST /hooks/NAME, GET /healthz), a
// persistent run queue with a cap on runs at once, the delivery of every
// run's end to the owner's channels (package channel; stderr when there is
// none), and, as channel.Host, the answers to the owner's commands and
// buttons. A run is carried out by a Runner (LauncherRunner: a new kind of
// launcher run, KindTrigger, planned and executed as every other run); this
// package never assembles a container.
//
// Everything that reaches the listener is hostile until its signature holds
// (hook.go), and the event stays untrusted input after: it reaches the run
// as a file, never as instructions, and the session it starts is tainted
// (provenance.OriginTrigger), so what it changes in memory waits for hobbs
// review.
package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hobbs-agent/hobbs/src/approval"
	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/channel"
	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/launcher"
	"github.com/hobbs-agent/hobbs/src/playbook"
	"github.com/hobbs-agent/hobbs/src/runner"
	"github.com/hobbs-agent/hobbs/src/style"
	"github.com/hobbs-agent/hobbs/src/task"
	"github.com/hobbs-agent/hobbs/src/vault"
)

// Runner carries out triggered runs.
type Runner interface {
	// Check reports whether playbook may run for a trigger now: at stage
	// supervised or autonomous, with a run: block approved for its
	// unattended runs. A refusal is audited by the Runner.
	Check(playbook string) error
	// Run runs j's playbook as the task j.Task, with event (the normalised
	// JSON, Event) for the agent to read, and returns how it ended.
	Run(ctx context.Context, j Job, event []byte) (Result, error)
}

// Result is how a triggered run ended.
type Result struct {
	// Finished: the Runner finished the task (task.Log.Done); when it did
	// not (an error before the run started), the service does.
	Finished bool
	Outcome  string // task.OK or task.Failed
	Why      string
	CostUSD  float64
	Turns    int
	Report   string // the run's final report
	Review   bool   // a supervised run: its result waits for the owner's review
	// Denied are the hosts the proxy refused the run, as hobbs playbook
	// allow names them.
	Denied []string
}

// Options are what a Service is made of. Given Launcher, New sets
// Instance, Config, Audit and Tasks from it, replacing any given, and
// fills Secret (the instance's vault) and Runner (LauncherRunner) when
// they are left out.
type Options struct {
	Launcher runner.Runner
	Instance instance.Instance
	Config   *config.Config
	Audit    *audit.Logger
	Tasks    task.Log
	// Playbooks is where Act allows a host for a playbook's runs.
	Playbooks *playbook.Store
	// Approvals answers held requests' questions from the channels
	// (approvals.go); nil: they are asked on the host only.
	Approvals *approval.Owner
	// Secret reads a vault entry: each trigger's shared secret, read once
	// when the service starts.
	Secret   func(entry string) ([]byte, error)
	Runner   Runner
	Channels []channel.Channel
	// Chat is one turn of the owner's conversation (channel.Host.Chat);
	// nil: chat is not set up.
	Chat func(ctx context.Context, conversation string, m channel.Message) (string, error)
	// Log writes the service's log lines (stderr).
	Log io.Writer
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// DrainTimeout is how long a SIGTERM lets running runs finish before
	// they are stopped (0: DefaultDrainTimeout).
	DrainTimeout time.Duration
	// ShedNoticeDelay is how long after a trigger's first shed delivery
	// its owner is told (0: DefaultShedNoticeDelay).
	ShedNoticeDelay time.Duration
	// Mail is what tests change of the mail triggers (mail.go).
	Mail MailOptions
}

// DefaultDrainTimeout bounds a drain's wait for running runs.
const DefaultDrainTimeout = 30 * time.Second

// Service is one hobbs serve.
type Service struct {
	opt      Options
	st       store
	q        *queue
	lim      *limits
	refusals refusals
	secrets  map[string][]byte
	auditMu  sync.Mutex

	mu       sync.Mutex
	running  map[string]live // job → its run
	draining bool
	wg       sync.WaitGroup
	kickc    chan struct{}
	runCtx   context.Context
	stopRuns context.CancelFunc
	mail     mailBoxes // the mail triggers (mail.go)
}

// Test seams, nil outside tests. stopLooked is called by Stop after its
// look at the queue (which drops a waiting job) and before it stops a
// running run; startMarked by startReady after it has marked jobs running
// and started their runs, as it lets go of the queue.
var stopLooked, startMarked func()

// live is a run this service is running.
type live struct {
	cancel   context.CancelFunc
	playbook string
	task     string
}

var _ channel.Host = (*Service)(nil)

// New makes a service: it reads each trigger's secret and takes back the
// queue a previous service left (a run it left running is recorded as
// interrupted and delivered; queued ones wait to run).
func New(opt Options) (*Service, error) {
	if l := opt.Launcher; l.Config != nil {
		opt.Instance, opt.Config, opt.Audit = l.Instance, l.Config, l.Audit
		opt.Tasks = task.Open(l.Instance, l.Audit)
		if opt.Secret == nil {
			v := vault.Open(l.Instance)
			if l.Passphrase != nil {
				v.Passphrase = l.Passphrase
			}
			opt.Secret = v.Get
		}
		if opt.Runner == nil {
			opt.Runner = LauncherRunner{Launcher: l, Playbooks: opt.Playbooks}
		}
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Log == nil {
		opt.Log = io.Discard
	}
	if opt.DrainTimeout == 0 {
		opt.DrainTimeout = DefaultDrainTimeout
	}
	if opt.ShedNoticeDelay == 0 {
		opt.ShedNoticeDelay = DefaultShedNoticeDelay
	}
	s := &Service{opt: opt, st: store{in: opt.Instance}, lim: newLimits(), secrets: map[string][]byte{}, running: map[string]live{},
		kickc: make(chan struct{}, 1)}
	s.runCtx, s.stopRuns = context.WithCancel(context.Background())
	for _, name := range opt.Config.TriggerNames() {
		t := opt.Config.Triggers[name]
		if t.Source == config.TriggerIMAP {
			continue // setUpMail
		}
		v, err := opt.Secret(t.Secret)
		if err != nil {
			return nil, errs.Failf("trigger %s: its secret (vault entry %s): %v", name, t.Secret, err).
				Advise(NoTriggerSecret, "entry", t.Secret)
		}
		s.secrets[name] = v
	}
	if err := s.setUpMail(opt.Mail); err != nil {
		return nil, err
	}
	if err := s.setUpChannels(); err != nil {
		return nil, err
	}
	q, problems, err := loadQueue(s.st)
	if err != nil {
		return nil, err
	}
	s.q = q
	for _, p := range problems {
		s.logf("queue: %s", p)
	}
	if err := s.loadShed(); err != nil {
		return nil, err
	}
	s.recover()
	return s, nil
}

func (s *Service) logf(format string, args ...any) {
	fmt.Fprintf(s.opt.Log, "%s hobbs serve: %s\n", s.opt.Now().UTC().Format(time.RFC3339), fmt.Sprintf(format, args...))
}

// audit records e. The service's own lines are written one at a time: a
// flood's handlers then wait on a mutex, not in the audit log's file lock,
// whose waiters poll.
func (s *Service) audit(e audit.Entry) {
	if s.opt.Audit != nil {
		s.auditMu.Lock()
		defer s.auditMu.Unlock()
		s.opt.Audit.Record(e, nil)
	}
}

// recover records the runs a previous service left running as
// interrupted: they are not run again (what they did is not known).
func (s *Service) recover() {
	const note = "interrupted: hobbs serve stopped before the run ended"
	for _, j := range s.q.list() {
		if j.State != Running {
			continue
		}
		if err := s.q.finish(j.ID, task.Failed, note, s.opt.Now()); err != nil {
			s.logf("queue: %v", err)
		}
		id := "job:" + j.ID
		if j.Task != "" {
			id = "task:" + j.Task
			if _, err := s.opt.Tasks.Done(j.Task, task.DoneOptions{Outcome: task.Failed, Retro: "## Run\n\n- " + note + "\n"}); err != nil {
				s.logf("task %s: %v", j.Task, err)
			}
		}
		s.deliver(channel.Notice{ID: id + ":end", Text: fmt.Sprintf("%s (trigger %s): %s", j.Playbook, j.Trigger, note)})
	}
}

// Serve is hobbs serve: as the user (never root), a Service made of opt
// listening at serve.listen until ctx ends, then drained.
func Serve(ctx context.Context, opt Options) error {
	if err := launcher.RefuseRoot(); err != nil {
		return err
	}
	s, err := New(opt)
	if err != nil {
		return err
	}
	return s.ListenAndRun(ctx)
}

// ListenAndRun listens at the config's serve.listen and runs until ctx
// ends, then drains (Run).
func (s *Service) ListenAndRun(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.opt.Config.Serve.Listen)
	if err != nil {
		if pid, held := serving(s.opt.Instance); held && addrInUse(err) {
			return alreadyServing(s.opt.Instance, pid)
		}
		return errs.Wrap(errs.Failure, err, "listen on %s (serve.listen)", s.opt.Config.Serve.Listen)
	}
	return s.Run(ctx, ln)
}

// Run serves webhooks on ln, runs the queue and the channels until ctx
// ends, then drains: it stops taking deliveries, starts no more runs, lets
// the running ones finish within DrainTimeout and stops those left (each
// recorded and delivered as stopped); queued runs stay queued for the next
// start. Only one service runs per instance.
func (s *Service) Run(ctx context.Context, ln net.Listener) error {
	if err := s.opt.Instance.FS().MkdirAll(s.opt.Instance.Locks(), 0o700); err != nil {
		return err
	}
	unlock, err := s.opt.Instance.FS().Lock(s.opt.Instance.Lock("serve"), 100*time.Millisecond)
	if err != nil {
		ln.Close()
		pid, _ := serving(s.opt.Instance)
		return alreadyServing(s.opt.Instance, pid)
	}
	defer unlock()
	writePID(s.opt.Instance)
	defer removePID(s.opt.Instance)
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 30 * time.Second, MaxHeaderBytes: 64 << 10}
	s.logf("listening on %s: %d triggers, at most %d runs at once", ln.Addr(), len(s.secrets), s.opt.Config.Serve.MaxRuns)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	chCtx, stopChannels := context.WithCancel(context.Background())
	var chWG sync.WaitGroup
	for _, c := range s.opt.Channels {
		chWG.Add(1)
		go func(c channel.Channel) {
			defer chWG.Done()
			if err := c.Run(chCtx, s); err != nil && chCtx.Err() == nil {
				s.logf("channel %s: %v", c.Name(), err)
			}
		}(c)
	}
	chWG.Add(1)
	go func() { defer chWG.Done(); s.watch(chCtx) }()
	chWG.Add(1)
	go func() {
		defer chWG.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-chCtx.Done():
				s.tick(s.opt.Now())
				return
			case <-t.C:
				s.tick(s.opt.Now())
			}
		}
	}()
	chWG.Add(1)
	go func() { defer chWG.Done(); s.watchApprovals(chCtx) }()
	s.runMail(chCtx, &chWG)
	dctx, stopDispatch := context.WithCancel(context.Background())
	dispatched := make(chan struct{})
	go func() { defer close(dispatched); s.dispatch(dctx) }()

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-served:
	}
	s.logf("draining: no more deliveries or runs")
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	_ = srv.Shutdown(sctx)
	cancel()
	s.mu.Lock()
	s.draining = true
	s.mu.Unlock()
	stopDispatch()
	<-dispatched
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(s.opt.DrainTimeout):
		s.logf("stopping the runs still running after %v", s.opt.DrainTimeout)
		s.stopRuns()
		<-done
	}
	stopChannels()
	chWG.Wait()
	s.logf("stopped")
	if errors.Is(runErr, http.ErrServerClosed) {
		runErr = nil
	}
	return runErr
}

// kick wakes the dispatcher.
func (s *Service) kick() {
	select {
	case s.kickc <- struct{}{}:
	default:
	}
}

// dispatch starts queued runs whose time has come, within the cap, until
// ctx ends.
func (s *Service) dispatch(ctx context.Context) {
	for {
		wait := s.startReady()
		var timer <-chan time.Time
		var t *time.Timer
		if wait > 0 {
			t = time.NewTimer(wait)
			timer = t.C
		}
		select {
		case <-ctx.Done():
		case <-s.kickc:
		case <-timer:
		}
		if t != nil {
			t.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// startReady starts the queued runs that may start now and returns how
// long until the next one may (0: none waits).
func (s *Service) startReady() time.Duration {
	s.mu.Lock()
	if s.draining {
		s.mu.Unlock()
		return 0
	}
	free := s.opt.Config.Serve.MaxRuns - len(s.running)
	busy := map[string]bool{} // two runs of one playbook never overlap (playbook.LockRun)
	for _, r := range s.running {
		busy[r.playbook] = true
	}
	s.mu.Unlock()
	if free <= 0 {
		return 0
	}
	var starts []Job
	var next time.Duration
	now := s.opt.Now()
	s.q.mu.Lock()
	var queued []*Job
	for _, j := range s.q.jobs {
		if j.State == Queued {
			queued = append(queued, j)
		}
	}
	// The owner's runs first, then the oldest.
	sort.Slice(queued, func(a, b int) bool {
		if queued[a].Owner != queued[b].Owner {
			return queued[a].Owner
		}
		return before(queued[a], queued[b])
	})
	for _, j := range queued {
		if wait := j.NotBefore.Sub(now); wait > 0 {
			if next == 0 || wait < next {
				next = wait
			}
			continue
		}
		if len(starts) >= free {
			break
		}
		if busy[j.Playbook] {
			continue
		}
		busy[j.Playbook] = true
		t := now.UTC()
		j.State, j.Started = Running, &t
		if err := s.q.save(j); err != nil {
			s.logf("queue: %v", err)
		}
		starts = append(starts, *j)
	}
	// A job marked running has its run in s.running before q.mu is let go:
	// Stop, which looks at the queue under q.mu, then finds the run to stop.
	s.mu.Lock()
	for _, j := range starts {
		ctx, cancel := context.WithCancel(s.runCtx)
		s.running[j.ID] = live{cancel: cancel, playbook: j.Playbook, task: j.Task}
		s.wg.Add(1)
		go s.runJob(ctx, cancel, j)
	}
	s.mu.Unlock()
	s.q.mu.Unlock()
	if startMarked != nil {
		startMarked()
	}
	return next
}

// runJob carries out one run: it makes the run's task record (a job
// converted from an older hobbs has one already), runs it, and records and
// delivers its end.
func (s *Service) runJob(ctx context.Context, cancel context.CancelFunc, j Job) {
	defer s.wg.Done()
	defer cancel()
	var res Result
	var err error
	if j.Task == "" {
		var t *task.Task
		t, err = s.opt.Tasks.Start(task.RunTitle(j.Playbook), "hobbs", j.Playbook)
		if err == nil {
			j.Task = t.ID
			if uerr := s.q.update(j.ID, func(q *Job) bool { q.Task = t.ID; return true }); uerr != nil {
				s.logf("queue: %v", uerr)
			}
			s.mu.Lock()
			if l, ok := s.running[j.ID]; ok {
				l.task = t.ID
				s.running[j.ID] = l
			}
			s.mu.Unlock()
		}
	}
	s.logf("run %s: playbook %s for trigger %s (job %s, %s)", j.Task, j.Playbook, j.Trigger, j.ID, style.N(len(j.Deliveries), "delivery", "deliveries"))
	switch {
	case err != nil:
		err = errs.Wrap(errs.Failure, err, "the run's task record")
	case j.Event == nil:
		err = errs.Failf("the run's event is missing")
	default:
		res, err = s.opt.Runner.Run(ctx, j, j.Event)
	}
	if err != nil && res.Outcome == "" {
		res.Outcome, res.Why = task.Failed, firstLine(err.Error())
	}
	if ctx.Err() != nil && s.runCtx.Err() != nil {
		res.Why = "stopped: hobbs serve was shutting down"
	}
	if !res.Finished && j.Task != "" {
		if _, derr := s.opt.Tasks.Done(j.Task, task.DoneOptions{Outcome: res.Outcome, Retro: "## Run\n\n- " + res.Why + "\n"}); derr != nil {
			s.logf("task %s: %v", j.Task, derr)
		}
	}
	if uerr := s.q.finish(j.ID, res.Outcome, res.Why, s.opt.Now()); uerr != nil {
		s.logf("queue: %v", uerr)
	}
	s.mu.Lock()
	delete(s.running, j.ID)
	s.mu.Unlock()
	s.kick()
	s.logf("run %s: %s", j.Task, outcomeText(res))
	if j.Task == "" { // its task record could not be made
		s.deliver(channel.Notice{ID: "job:" + j.ID + ":end", Text: fmt.Sprintf("%s (trigger %s, job %s): %s", j.Playbook, j.Trigger, j.ID, outcomeText(res))})
		return
	}
	s.deliver(endNotice(j, res))
	s.mailRunEnded(j, res)
	for _, n := range deniedNotices(j.Task, j.Playbook, res.Denied) {
		s.deliver(n)
	}
}

// maxDeniedNotices bounds the hosts one run's end asks about.
const maxDeniedNotices = 5

// deniedNotices ask the owner, one host a notice (a notice's buttons are
// answered once), whether playbook's runs may reach each host the proxy
// refused run task: "allow HOST for PLAYBOOK" (hobbs playbook allow) or
// "deny" (it stays refused).
func deniedNotices(task, pb string, denied []string) []channel.Notice {
	var out []channel.Notice
	for i, h := range denied {
		if i == maxDeniedNotices {
			out = append(out, channel.Notice{ID: "task:" + task + ":denied:more",
				Text: fmt.Sprintf("%s: %d more hosts were refused (hobbs task show %s)", pb, len(denied)-i, task)})
			break
		}
		out = append(out, channel.Notice{ID: "task:" + task + ":denied:" + h,
			Text: fmt.Sprintf("%s (task %s) was refused %s: its run: block does not list it.", pb, task, h),
			Buttons: []channel.Action{{Kind: channel.ActAllowHost, Label: "allow " + h + " for " + pb, Playbook: pb, Host: h},
				{Kind: channel.ActDenyHost, Label: "deny", Playbook: pb, Host: h}}})
	}
	return out
}

// outcomeText is a result in a few words.
func outcomeText(r Result) string {
	t := r.Outcome
	if r.Why != "" {
		t += " (" + r.Why + ")"
	}
	return t
}

// maxReportLines is how much of a run's report a notice carries.
const maxReportLines = 8

// endNotice is the notice of a run's end: outcome, cost, the first lines
// of its report, and for a supervised run the review's buttons.
func endNotice(j Job, r Result) channel.Notice {
	return runNotice(j.Task, fmt.Sprintf("%s (trigger %s): %s", j.Playbook, j.Trigger, outcomeText(r)), r.Turns, r.CostUSD, r.Report, r.Review)
}

// runNotice is the notice of the end of run task: head, its turns and
// cost, the first lines of report, and the review's buttons when the run
// waits for the owner's review.
func runNotice(task, head string, turns int, cost float64, report string, review bool) channel.Notice {
	var b strings.Builder
	b.WriteString(head)
	if cost > 0 || turns > 0 {
		fmt.Fprintf(&b, ", %d turns, $%s", turns, playbook.FormatUSD(cost))
	}
	fmt.Fprintf(&b, "\ntask %s (hobbs task show %s)", task, task)
	if rep := strings.TrimSpace(report); rep != "" {
		lines := strings.Split(rep, "\n")
		if len(lines) > maxReportLines {
			lines = append(lines[:maxReportLines], "…")
		}
		b.WriteString("\n\n" + strings.Join(lines, "\n"))
	}
	n := channel.Notice{ID: "task:" + task + ":end", Text: b.String()}
	if review {
		n.Text += "\n\nThe playbook is supervised: approve or reject this run."
		n.Buttons = []channel.Action{{Kind: channel.ActApprove, Label: "Approve", Task: task},
			{Kind: channel.ActReject, Label: "Reject", Task: task}}
	}
	return n
}

// deliver hands n to every channel; with none, it is logged.
func (s *Service) deliver(n channel.Notice) {
	if len(s.opt.Channels) == 0 {
		s.logf("notice %s: %s", n.ID, strings.ReplaceAll(n.Text, "\n", "\n    "))
		return
	}
	for _, c := range s.opt.Channels {
		if err := c.Deliver(n); err != nil {
			s.logf("channel %s: notice %s not queued: %v", c.Name(), n.ID, err)
			s.logf("notice %s: %s", n.ID, n.Text)
		}
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// jsonReply writes v as the response, with code.
func jsonReply(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
