package serve

import (
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/channel"
	"github.com/hobbs-agent/hobbs/src/config"
)

// The limits that keep a flood of deliveries from driving the owner's
// agent (docs/serve.md, Limits). Anyone who can open an issue on a public
// repository makes validly signed deliveries, so signed is not trusted:
//
//   - the queue is bounded: serve.max_queue runs waiting across all
//     triggers, triggers.NAME.max_queue for one trigger;
//   - one sender starts at most triggers.NAME.per_sender runs through a
//     trigger in an hour (a delivery debounce folds into a waiting run
//     starts none and is not counted);
//   - the trigger's owner (triggers.NAME.owner_login; a mail trigger's
//     allowed senders, through enqueueFrom) is not limited per sender
//     and has a lane of the queue of its own, the trigger's max_queue,
//     which strangers cannot fill; the owner's waiting runs start first.
//
// A delivery beyond a limit is shed: answered at once (429 over the
// sender's limit, 503 with the queue full, each with a JSON reason),
// audited, not queued and not recorded as seen (GitHub's delivery log
// lists it, and it may be redelivered). The owner is told once per trigger
// per hour how many were shed and from whom: ShedNoticeDelay after the
// first, then at most once an hour.
//
// Refusals before a signature holds (no or a wrong signature, an oversized
// or unreadable body) are counted per source address and logged and
// audited at most once a second per address, with the count, so a flood
// of them cannot fill the disk.

// DefaultShedNoticeDelay is how long after the first shed delivery the
// owner is told, so the notice counts the burst it starts.
const DefaultShedNoticeDelay = 10 * time.Second

// shedWindow is how far back the shed counts of status reach, and how
// often a trigger's owner hears of shedding at most.
const shedWindow = time.Hour

// maxSenders bounds the senders a trigger tracks in an hour; a delivery
// from a sender beyond it is shed.
const maxSenders = 10000

// Shed is a delivery refused by a limit: the HTTP status and the reason.
type Shed struct {
	Code   int
	Reason string
}

func (e *Shed) Error() string { return e.Reason }

// limits is the service's accounting of senders and shed deliveries.
type limits struct {
	mu sync.Mutex
	// runs are the times each sender of a trigger started a run, in the
	// last hour: trigger → sender → times.
	runs map[string]map[string][]time.Time
	shed map[string]*shedTally
	// dirty: shed counts changed since they were last written.
	dirty bool
}

// shedTally is one trigger's shed deliveries.
type shedTally struct {
	// minutes counts the shed per minute, the last hour's (status).
	minutes map[int64]int
	// pending are the shed not told yet: by sender, from first on.
	pending    int
	bySender   map[string]int
	byReason   map[string]int
	first      time.Time
	lastNotice time.Time
}

func newLimits() *limits {
	return &limits{runs: map[string]map[string][]time.Time{}, shed: map[string]*shedTally{}}
}

// recent returns times not older than an hour before now.
func recent(ts []time.Time, now time.Time) []time.Time {
	i := 0
	for i < len(ts) && now.Sub(ts[i]) >= shedWindow {
		i++
	}
	return ts[i:]
}

// senderFull reports why sender may start no more runs of trigger t now,
// or "".
func (l *limits) senderFull(name string, t config.Trigger, sender string, now time.Time) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.runs[name]
	ts := recent(m[sender], now)
	if len(ts) >= t.SenderBound() {
		return fmt.Sprintf("sender %q started %d runs of this trigger in the last hour (per_sender %d)", sender, len(ts), t.SenderBound())
	}
	if _, ok := m[sender]; !ok && len(m) >= maxSenders {
		return fmt.Sprintf("%d senders started runs of this trigger in the last hour", len(m))
	}
	return ""
}

// started records that sender started a run of trigger at now.
func (l *limits) started(trigger, sender string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.runs[trigger]
	if m == nil {
		m = map[string][]time.Time{}
		l.runs[trigger] = m
	}
	m[sender] = append(recent(m[sender], now), now)
}

// prune forgets senders with no run in the last hour and shed minutes
// older than an hour.
func (l *limits) prune(now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range l.runs {
		for s, ts := range m {
			if len(recent(ts, now)) == 0 {
				delete(m, s)
			}
		}
	}
	for _, t := range l.shed {
		for m := range t.minutes {
			if now.Sub(time.Unix(m*60, 0)) >= shedWindow+time.Minute {
				delete(t.minutes, m)
				l.dirty = true
			}
		}
	}
}

// maxPendingSenders bounds the senders one notice names counts of.
const maxPendingSenders = 1000

// shedOne counts a shed delivery of trigger from sender.
func (l *limits) shedOne(trigger, sender, reason string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.shed[trigger]
	if t == nil {
		t = &shedTally{minutes: map[int64]int{}}
		l.shed[trigger] = t
	}
	t.minutes[now.Unix()/60]++
	if t.pending == 0 {
		t.first, t.bySender, t.byReason = now, map[string]int{}, map[string]int{}
	}
	t.pending++
	if _, ok := t.bySender[sender]; ok || len(t.bySender) < maxPendingSenders {
		t.bySender[sender]++
	}
	t.byReason[reason]++
	l.dirty = true
}

// shedLastHour is how many deliveries of each trigger were shed in the
// last hour.
func (l *limits) shedLastHour(now time.Time) map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]int{}
	for name, t := range l.shed {
		for m, n := range t.minutes {
			if now.Sub(time.Unix(m*60, 0)) < shedWindow {
				out[name] += n
			}
		}
	}
	return out
}

// dueNotices returns the shed notices due at now: a trigger's first
// ShedNoticeDelay after its first untold shed delivery, and none within an
// hour of its last.
func (l *limits) dueNotices(now time.Time, delay time.Duration) []channel.Notice {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []channel.Notice
	names := make([]string, 0, len(l.shed))
	for n := range l.shed {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		t := l.shed[name]
		if t.pending == 0 || now.Before(t.first.Add(delay)) || (!t.lastNotice.IsZero() && now.Before(t.lastNotice.Add(shedWindow))) {
			continue
		}
		out = append(out, shedNotice(name, t, now))
		t.lastNotice, t.pending, t.bySender, t.byReason = now, 0, nil, nil
	}
	return out
}

// maxNamedSenders is how many senders a shed notice names.
const maxNamedSenders = 10

// shedNotice tells the owner what trigger name shed since t.first.
func shedNotice(name string, t *shedTally, now time.Time) channel.Notice {
	type sc struct {
		s string
		n int
	}
	var ss []sc
	named := 0
	for s, n := range t.bySender {
		ss = append(ss, sc{s, n})
		named += n
	}
	sort.Slice(ss, func(a, b int) bool { return ss[a].n > ss[b].n || ss[a].n == ss[b].n && ss[a].s < ss[b].s })
	var from []string
	for i, x := range ss {
		if i == maxNamedSenders {
			from = append(from, fmt.Sprintf("%d more", len(ss)-i))
			break
		}
		who := x.s
		if who == "" {
			who = "(no sender)"
		}
		from = append(from, fmt.Sprintf("%s (%d)", who, x.n))
	}
	if rest := t.pending - named; rest > 0 {
		from = append(from, fmt.Sprintf("%d from senders not counted apart", rest))
	}
	var why []string
	for r, n := range t.byReason {
		why = append(why, fmt.Sprintf("%s: %d", r, n))
	}
	sort.Strings(why)
	return channel.Notice{ID: "shed:" + name + ":" + now.UTC().Format("20060102T150405"),
		Text: fmt.Sprintf("trigger %s shed %d deliveries since %s (%s), from %d senders: %s. They were answered at once, not run; "+
			"the source's delivery log lists them (GitHub: the webhook's Recent Deliveries). The next count comes in an hour at the earliest (hobbs serve status).",
			name, t.pending, t.first.UTC().Format("15:04:05 UTC"), strings.Join(why, ", "), len(ss), strings.Join(from, ", "))}
}

// admit decides whether a delivery of trigger from sender may start a new
// run now, and counts it when it may not: nil, or the *Shed that says why.
// owner: the sender is the trigger's owner (ownerOf). The caller queues
// the run under the queue's lock (the counts are the queue's).
func (s *Service) admit(name string, t config.Trigger, sender string, owner bool, c counts, now time.Time) *Shed {
	var shed *Shed
	switch {
	case owner:
		if c.triggerOwner >= t.QueueBound() {
			shed = &Shed{http.StatusServiceUnavailable, fmt.Sprintf("the owner's queue of this trigger is full (%d waiting)", c.triggerOwner)}
		}
	case c.strangers >= s.opt.Config.Serve.QueueBound():
		shed = &Shed{http.StatusServiceUnavailable, fmt.Sprintf("the queue is full (%d runs waiting, serve.max_queue)", c.strangers)}
	case c.trigger >= t.QueueBound():
		shed = &Shed{http.StatusServiceUnavailable, fmt.Sprintf("this trigger's queue is full (%d runs waiting, max_queue)", c.trigger)}
	default:
		if why := s.lim.senderFull(name, t, sender, now); why != "" {
			shed = &Shed{http.StatusTooManyRequests, why}
		}
	}
	return shed
}

// shedKind names a shed's reason in a few words, for the owner's notice.
func shedKind(sh *Shed) string {
	switch {
	case sh.Code == http.StatusTooManyRequests:
		return "over the per-sender limit"
	case strings.HasPrefix(sh.Reason, "the owner's"):
		return "the owner's lane full"
	}
	return "queue full"
}

// ownerOf reports whether sender is trigger t's owner: its owner_login
// (case-insensitive, as GitHub and GitLab logins are). A mail trigger
// passes its allowed senders' verdict to enqueueAs instead.
func ownerOf(t config.Trigger, sender string) bool {
	return t.OwnerLogin != "" && strings.EqualFold(t.OwnerLogin, sender)
}

// refusals bounds the log of refusals before a signature holds: per
// source address, one line a second at most, with the count.
type refusals struct {
	mu   sync.Mutex
	from map[string]*refused
}

type refused struct {
	last    time.Time // when a line was last written
	pending int       // refusals since, not written
	trigger string
	code    int
	reason  string
}

// maxRefusalSources bounds the addresses counted apart; the others share
// one count.
const maxRefusalSources = 1024

// sourceOf is the address of a request without its port.
func sourceOf(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return h
	}
	return r.RemoteAddr
}

// refuseUnsigned counts a refusal before the signature held, and logs and
// audits it when its source's last line is a second old or more.
func (s *Service) refuseUnsigned(r *http.Request, trigger string, code int, why string) {
	src := sourceOf(r)
	now := s.opt.Now()
	s.refusals.mu.Lock()
	if s.refusals.from == nil {
		s.refusals.from = map[string]*refused{}
	}
	f := s.refusals.from[src]
	if f == nil {
		if len(s.refusals.from) >= maxRefusalSources {
			src = "other"
			f = s.refusals.from[src]
		}
		if f == nil {
			f = &refused{}
			s.refusals.from[src] = f
		}
	}
	f.trigger, f.code, f.reason = trigger, code, why
	f.pending++
	write := now.Sub(f.last) >= time.Second
	n := f.pending
	if write {
		f.last, f.pending = now, 0
	}
	s.refusals.mu.Unlock()
	if write {
		s.logRefusals(src, trigger, code, why, n)
	}
}

// logRefusals writes one line for n refusals from src.
func (s *Service) logRefusals(src, trigger string, code int, why string, n int) {
	s.audit(audit.Entry{Event: "serve.hook", Subject: trigger, Outcome: "refused",
		Detail: map[string]any{"reason": why, "remote": src, "count": n}})
	s.logf("trigger %s: refused (%d): %s (%d from %s)", trigger, code, why, n, src)
}

// flushRefusals writes the counts held back a second or more, and forgets
// sources quiet for a minute.
func (s *Service) flushRefusals(now time.Time) {
	type line struct {
		src, trigger, why string
		code, n           int
	}
	var out []line
	s.refusals.mu.Lock()
	for src, f := range s.refusals.from {
		if f.pending > 0 && now.Sub(f.last) >= time.Second {
			out = append(out, line{src, f.trigger, f.reason, f.code, f.pending})
			f.last, f.pending = now, 0
		} else if f.pending == 0 && now.Sub(f.last) >= time.Minute {
			delete(s.refusals.from, src)
		}
	}
	s.refusals.mu.Unlock()
	for _, l := range out {
		s.logRefusals(l.src, l.trigger, l.code, l.why, l.n)
	}
}

// tick is the limits' second: held-back refusals written, due shed
// notices delivered, the shed counts saved when they changed.
func (s *Service) tick(now time.Time) {
	s.flushRefusals(now)
	for _, n := range s.lim.dueNotices(now, s.opt.ShedNoticeDelay) {
		s.deliver(n)
	}
	s.lim.prune(now)
	s.saveShed(now)
}
