package egress

// Held requests (docs/egress.md, "Held requests"). A request — CONNECT or
// plain HTTP — that the policy refuses only because no rule names its host
// (rule default-deny) waits, up to Options.Hold, while the owner is asked
// through the approvals directory (package approval); every other refusal
// (a deny entry, the address guard, a leak, bad credentials or target) is
// never held. The hold path runs only after the policy has refused: an
// allowed request never reaches it.
//
// One question per host and port: later requests to it wait on the same
// question. At most approval.MaxPerSession questions wait in the session
// and approval.MaxPerInstance in the instance; beyond, a request is
// refused at once, saying so. The answer acts in this proxy only: Once lets
// the requests waiting on the question through, This session (and Always,
// whose policy write is the host's) lets the host through for the rest of
// the session. No answer in time, or Deny, is today's refusal. When the
// proxy stops, every question ends (refused) and the session's directory
// is removed.

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/hobbs-agent/hobbs/src/approval"
	"github.com/hobbs-agent/hobbs/src/policy"
	"github.com/hobbs-agent/hobbs/src/provenance"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// HoldOptions configure held requests; a zero Wait or an empty Dir holds
// nothing.
type HoldOptions struct {
	Wait     time.Duration // how long a request waits for the owner's answer
	Dir      string        // the approvals directory (instance.Approvals, as mounted)
	Playbook string        // the playbook of a run with its own run: block; "" for the instance's policy
	// Origin is how the session started, "KIND" or "KIND:NAME"
	// (provenance.Origin): a session a trigger or a mail message started
	// is tainted from its start (provenance.Origin.StartTaint).
	Origin string
	// Untrusted: the session starts tainted though its kind does not (a
	// chat turn of a conversation holding a tainted turn, or whose message
	// carries someone else's text).
	Untrusted bool
	// Poll is how often the directory is read for answers besides its
	// fsnotify events (a filesystem that delivers none); default 1 s.
	Poll time.Duration
}

// heldQuestion is one question and the requests waiting on it.
type heldQuestion struct {
	q      approval.Question
	key    string
	done   chan struct{}
	answer string // approval.Once, …; "" when it expired or the proxy stops
	via    string
	timer  *time.Timer
}

// holder holds requests for one session's proxy.
type holder struct {
	s      *Server
	opts   HoldOptions
	dir    approval.Dir
	origin string

	tainted atomic.Bool
	mu      sync.Mutex
	why     []string                 // why the session is tainted
	pending map[string]*heldQuestion // by host:port
	byID    map[string]*heldQuestion
	allowed map[string]bool // This session (and Always), by host:port
	// asking are the requests on their way to ask a new question (in
	// newQuestion), by host:port: each host:port holds a place in the
	// session's bound from lookup on.
	asking map[string]int
	closed bool
	stop   chan struct{}
	done   chan struct{}
}

// newHolder starts holding for s, or returns nil when o holds nothing.
func newHolder(s *Server, o HoldOptions) (*holder, error) {
	if o.Wait <= 0 || o.Dir == "" {
		return nil, nil
	}
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	if s.opts.Session == "" {
		return nil, fmt.Errorf("holding requests needs the session's name (--session)")
	}
	h := &holder{s: s, opts: o, dir: approval.Dir{Root: safefile.Beneath(o.Dir)},
		pending: map[string]*heldQuestion{}, byID: map[string]*heldQuestion{}, allowed: map[string]bool{}, asking: map[string]int{},
		stop: make(chan struct{}), done: make(chan struct{})}
	kind, name, _ := strings.Cut(o.Origin, ":")
	if kind == "" {
		kind = provenance.OriginTerminal
	}
	origin := provenance.Origin{Kind: kind, Name: name}
	if o.Untrusted {
		origin.Untrusted = "started by " + origin.String() + " with untrusted input"
	}
	h.origin = origin.String()
	if why := origin.StartTaint(); why != "" {
		h.taint(why)
	}
	if err := h.dir.Root.MkdirAll(s.opts.Session, 0o700); err != nil {
		return nil, fmt.Errorf("approvals directory: %w", err)
	}
	go h.watch()
	return h, nil
}

func (h *holder) taint(why string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, w := range h.why {
		if w == why {
			return
		}
	}
	h.why = append(h.why, why)
	h.tainted.Store(true)
}

// noteAllowed marks the session tainted by an allowed destination whose
// host is not trusted: its responses reach the agent. Once tainted, it
// costs one atomic load.
func (h *holder) noteAllowed(p *policy.Policy, t policy.Target) {
	if h == nil || h.tainted.Load() || p.Trusts(t.Host) {
		return
	}
	h.taint("read from " + net.JoinHostPort(t.Host, strconv.Itoa(t.Port)))
}

// ask holds a request the policy refused by default-deny (rec says why)
// until the owner answers or the hold ends. It returns the explanation to
// go on with and true when the owner allowed it; otherwise rec.reason says
// why it is refused.
func (h *holder) ask(ctx context.Context, rec *record, t policy.Target) (policy.Explanation, bool) {
	key := net.JoinHostPort(t.Host, strconv.Itoa(t.Port))
	h.mu.Lock()
	w, q, allowed, err := h.lookup(key, true)
	h.mu.Unlock()
	switch {
	case w != nil:
		h.recount(q)
	case err == nil && !allowed:
		w, allowed, err = h.newQuestion(rec, t, key)
	}
	switch {
	case err != nil:
		rec.reason += "; not held: " + err.Error()
		return policy.Explanation{}, false
	case allowed:
		return heldAllow(t, approval.Session, ""), true
	}
	select {
	case <-w.done:
	case <-ctx.Done():
		rec.reason += "; the client went away while the owner was asked"
		return policy.Explanation{}, false
	}
	switch w.answer {
	case approval.Once, approval.Session, approval.Always:
		return heldAllow(t, w.answer, w.via), true
	case approval.Deny:
		rec.reason += "; the owner denied it (on the " + w.via + ")"
	case "":
		if h.isClosed() {
			rec.reason += "; the session ended before the owner answered"
		} else {
			rec.reason += fmt.Sprintf("; no answer from the owner within %v", h.opts.Wait)
		}
	}
	return policy.Explanation{}, false
}

// lookup is what a request to key finds (h.mu is held): an error when the
// session is ending or a new question would pass the session's bound;
// allowed when This session (or Always) let key through; or the question
// open for key, counting one more request waiting on it (q is that count's
// question, to write). All nil: a new question is to be asked, and with
// reserve key keeps its place in the bound (h.asking) until newQuestion
// ends, so requests that wait together for the directory's lock are
// refused at once beyond the bound, as one at a time would be.
func (h *holder) lookup(key string, reserve bool) (w *heldQuestion, q approval.Question, allowed bool, err error) {
	switch {
	case h.closed:
		return nil, q, false, fmt.Errorf("the session is ending")
	case h.allowed[key]:
		return nil, q, true, nil
	}
	if w = h.pending[key]; w != nil {
		w.q.Waiting++
		return w, w.q, false, nil
	}
	if h.asking[key] == 0 && len(h.pending)+len(h.asking) >= approval.MaxPerSession {
		return nil, q, false, fmt.Errorf("%d questions already wait in this session", approval.MaxPerSession)
	}
	if reserve {
		h.asking[key]++
	}
	return nil, q, false, nil
}

// unreserve gives back key's place that lookup kept (h.mu is held).
func (h *holder) unreserve(key string) {
	if h.asking[key]--; h.asking[key] <= 0 {
		delete(h.asking, key)
	}
}

// recount rewrites question q with the number of requests waiting on it,
// while it is still open (under the directory's lock, which the hold's
// end takes to remove it); best effort.
func (h *holder) recount(q approval.Question) {
	unlock, err := h.dir.Lock()
	if err != nil {
		return
	}
	defer unlock()
	h.rewrite(q)
}

// rewrite is recount with the directory's lock held.
func (h *holder) rewrite(q approval.Question) {
	if !h.dir.Root.Exists(q.Session + "/" + q.ID + ".q.json") {
		return
	}
	if _, answered, _ := h.dir.ReadAnswer(q.Session, q.ID); !answered {
		h.dir.WriteQuestion(q)
	}
}

func (h *holder) isClosed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}

// newQuestion asks a new question about key, whose place in the session's
// bound lookup kept, under the approvals directory's lock, which it takes
// before h.mu: while it waits for the lock (up to its timeout, another
// session or the host holding it) the session's other requests, answers
// and taints go on.
func (h *holder) newQuestion(rec *record, t policy.Target, key string) (*heldQuestion, bool, error) {
	lockSeam("locking")
	unlock, err := h.dir.Lock()
	lockSeam("locked")
	if err != nil {
		h.mu.Lock()
		h.unreserve(key)
		h.mu.Unlock()
		return nil, false, fmt.Errorf("cannot ask the owner: %v", err)
	}
	w, asked, allowed, err := h.askLocked(rec, t, key)
	unlock()
	if asked.ID != "" {
		h.audit(asked, "egress.hold", "held", rec.client, "")
	}
	return w, allowed, err
}

// askLocked is newQuestion once it holds the directory's lock. With h.mu
// it looks again (lookup): another request may have asked about key, the
// owner allowed it or the session ended meanwhile; the request then waits
// on that question, goes through, or is refused. Otherwise it writes the
// question and returns it as asked too (w.q changes under h.mu).
func (h *holder) askLocked(rec *record, t policy.Target, key string) (w *heldQuestion, asked approval.Question, allowed bool, err error) {
	open := h.dir.OpenCount() // questions are added only under the lock
	h.mu.Lock()
	h.unreserve(key)
	w, q, allowed, err := h.lookup(key, false)
	if w != nil || allowed || err != nil {
		h.mu.Unlock()
		if w != nil {
			h.rewrite(q)
		}
		return w, asked, allowed, err
	}
	defer h.mu.Unlock()
	if open >= approval.MaxPerInstance {
		return nil, asked, false, fmt.Errorf("%d questions already wait in this instance", approval.MaxPerInstance)
	}
	now := time.Now()
	path := ""
	if !t.Connect {
		path = rec.holdPath
	}
	q = approval.Question{ID: approval.NewID(), Session: h.s.opts.Session, Playbook: h.opts.Playbook, Origin: h.origin,
		Tainted: h.tainted.Load(), Why: append([]string(nil), h.why...), Method: rec.method, Host: t.Host, Port: t.Port,
		Path: path, Waiting: 1, Asked: now.UTC(), Expires: now.Add(h.opts.Wait).UTC()}
	q.Answers = approval.OffersFor(q.Tainted)
	if err := h.dir.WriteQuestion(q); err != nil {
		return nil, asked, false, fmt.Errorf("cannot ask the owner: %v", err)
	}
	w = &heldQuestion{q: q, key: key, done: make(chan struct{})}
	h.pending[key], h.byID[q.ID] = w, w
	w.timer = time.AfterFunc(h.opts.Wait, func() { h.expire(w) })
	return w, q, false, nil
}

// questionLockSeam is a test seam, nil outside tests: newQuestion calls it
// with "locking" before it takes the approvals directory's lock and with
// "locked" once it has it or gave up.
var questionLockSeam atomic.Pointer[func(stage string)]

func lockSeam(stage string) {
	if f := questionLockSeam.Load(); f != nil {
		(*f)(stage)
	}
}

// heldAllow is the explanation of a destination the owner allowed: an
// opaque tunnel or a plain request, with no request rules and no secrets
// (a bound secret never gains a host this way).
func heldAllow(t policy.Target, answer, via string) policy.Explanation {
	ex := policy.Explanation{Decision: policy.Decision{Allow: true, Rule: "held-" + answer, Host: t.Host, Port: t.Port}, Mode: policy.ModePlain}
	if t.Connect {
		ex.Mode = policy.ModeTunnel
	}
	ex.Reason = "allowed by the owner (" + answer + ")"
	if via != "" {
		ex.Reason = "allowed by the owner (" + answer + ", on the " + via + ")"
	}
	return ex
}

// check acts on question id's answer, if it has one.
func (h *holder) check(id string) {
	h.mu.Lock()
	w := h.byID[id]
	h.mu.Unlock()
	if w == nil {
		return
	}
	a, ok, err := h.dir.ReadAnswer(w.q.Session, id)
	if err != nil {
		h.s.opts.Logf("approvals: %v", err)
		return
	}
	if ok {
		h.resolve(w, a)
	}
}

// resolve ends w with answer a.
func (h *holder) resolve(w *heldQuestion, a approval.Answer) {
	h.mu.Lock()
	if h.byID[w.q.ID] != w {
		h.mu.Unlock()
		return
	}
	delete(h.byID, w.q.ID)
	delete(h.pending, w.key)
	w.answer, w.via = a.Answer, a.Via
	if a.Answer == approval.Session || a.Answer == approval.Always {
		h.allowed[w.key] = true
	}
	w.timer.Stop()
	close(w.done)
	h.mu.Unlock()
	h.audit(w.q, "egress.answer", a.Answer, a.Via, a.By) // w is no longer pending: w.q stays as it is
}

// expire ends w unanswered, unless an answer came as the hold ended: under
// the directory's lock (which answers are given under), the answer is read
// once more, then the question removed.
func (h *holder) expire(w *heldQuestion) {
	unlock, err := h.dir.Lock()
	a, answered, _ := h.dir.ReadAnswer(w.q.Session, w.q.ID)
	if !answered {
		h.dir.RemoveQuestion(w.q.Session, w.q.ID) // no answer can come now
	}
	if err == nil {
		unlock()
	}
	if answered {
		h.resolve(w, a)
		return
	}
	h.mu.Lock()
	if h.byID[w.q.ID] != w {
		h.mu.Unlock()
		return
	}
	delete(h.byID, w.q.ID)
	delete(h.pending, w.key)
	close(w.done)
	h.mu.Unlock()
	h.audit(w.q, "egress.answer", "expired", "", "")
}

// watch reads answers as they come: fsnotify on the session's directory,
// and a poll behind it while questions wait.
func (h *holder) watch() {
	defer close(h.done)
	dir := filepath.Join(h.opts.Dir, h.s.opts.Session)
	var events chan fsnotify.Event
	if fw, err := fsnotify.NewWatcher(); err == nil {
		if fw.Add(dir) == nil {
			events = fw.Events
			go func() {
				for range fw.Errors {
				}
			}()
		}
		defer fw.Close()
	}
	poll := time.NewTicker(h.opts.Poll)
	defer poll.Stop()
	for {
		select {
		case <-h.stop:
			return
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if id, ok := strings.CutSuffix(filepath.Base(ev.Name), ".a.json"); ok {
				h.check(id)
			}
		case <-poll.C:
			h.mu.Lock()
			ids := make([]string, 0, len(h.byID))
			for id := range h.byID {
				ids = append(ids, id)
			}
			h.mu.Unlock()
			for _, id := range ids {
				h.check(id)
			}
		}
	}
}

// close ends every question (their requests are refused) and removes the
// session's directory: no question outlives its session.
func (h *holder) close() {
	if h == nil {
		return
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	for id, w := range h.byID {
		w.timer.Stop()
		delete(h.byID, id)
		delete(h.pending, w.key)
		close(w.done)
	}
	h.mu.Unlock()
	close(h.stop)
	<-h.done
	if unlock, err := h.dir.Lock(); err == nil {
		h.dir.RemoveSession(h.s.opts.Session)
		unlock()
	}
}

// audit writes a held request's question or answer to the egress audit:
// for egress.hold, via is the client that asked.
func (h *holder) audit(q approval.Question, event, outcome, via, by string) {
	reason := fmt.Sprintf("question %s: %s %s", q.ID, q.Method, q.Target())
	if q.Tainted {
		reason += " (tainted: " + strings.Join(q.Why, "; ") + ")"
	}
	if via != "" && event == "egress.answer" {
		reason += "; answered on the " + via
		if by != "" {
			reason += " by " + by
		}
	}
	client := ""
	if event == "egress.hold" {
		client = clientName(via)
	}
	l := policy.AuditLine{Time: time.Now().UTC(), Actor: "proxy", Session: h.s.opts.Session, Event: event, Outcome: outcome,
		Subject: net.JoinHostPort(q.Host, strconv.Itoa(q.Port)),
		Detail:  policy.AuditDetail{Client: client, Method: q.Method, Rule: "default-deny", Reason: reason, Path: q.Path}}
	l.Subject = h.s.toAudit(l.Subject)
	l.Detail.Reason, l.Detail.Path = h.s.toAudit(l.Detail.Reason), h.s.toAudit(l.Detail.Path)
	h.s.audit.log(&l)
}

// holdable reports whether a refusal may be held: only one by no rule
// (default-deny), and never of an address literal the address guard
// refuses.
func holdable(p *policy.Policy, h policy.Host, ex policy.Explanation) bool {
	if ex.Rule != "default-deny" {
		return false
	}
	if h.IsIP() {
		ok, _ := p.AddrAllowed(h.IP)
		return ok
	}
	return true
}
