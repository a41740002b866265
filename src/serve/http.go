package serve

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/channel"
	"github.com/hobbs-agent/hobbs/src/config"
)

// ServeHTTP is the listener: GET /healthz, POST /hooks/NAME.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/healthz":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	case strings.HasPrefix(r.URL.Path, "/hooks/"):
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		s.hook(w, r, strings.TrimPrefix(r.URL.Path, "/hooks/"))
	default:
		http.NotFound(w, r)
	}
}

// reply is the listener's JSON answer.
type reply struct {
	Status string `json:"status"` // queued, ignored, refused, shed
	Job    string `json:"job,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// hook takes one delivery for trigger name (see hook.go for the order of
// its checks).
func (s *Service) hook(w http.ResponseWriter, r *http.Request, name string) {
	t, ok := s.opt.Config.Triggers[name]
	secret := s.secrets[name]
	if !ok || secret == nil {
		jsonReply(w, http.StatusNotFound, reply{Status: "refused", Reason: "no such trigger"}) // JSON, as every answer of /hooks/
		return
	}
	refuse := func(code int, why string, detail map[string]any) {
		if detail == nil {
			detail = map[string]any{}
		}
		detail["reason"], detail["remote"] = why, r.RemoteAddr
		s.audit(audit.Entry{Event: "serve.hook", Subject: name, Outcome: "refused", Detail: detail})
		s.logf("trigger %s: refused (%d): %s", name, code, why)
		jsonReply(w, code, reply{Status: "refused", Reason: why})
	}
	// Before the signature holds, a refusal is counted and logged at most
	// once a second per source address (limits.go).
	unsigned := func(code int, why string) {
		s.refuseUnsigned(r, name, code, why)
		jsonReply(w, code, reply{Status: "refused", Reason: why})
	}
	if r.ContentLength > MaxBody {
		unsigned(http.StatusRequestEntityTooLarge, "body over 1 MiB")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			unsigned(http.StatusRequestEntityTooLarge, "body over 1 MiB")
			return
		}
		unsigned(http.StatusBadRequest, "body not read")
		return
	}
	if err := Verify(t.Source, secret, r.Header, body); err != nil {
		unsigned(http.StatusUnauthorized, "bad signature")
		return
	}
	if sh, sender := s.precheck(name, t, r.Header, body); sh != nil {
		s.shed(w, name, DeliveryID(t.Source, r.Header, body), sender, sh)
		return
	}
	keys := ReplayKeys(t.Source, r.Header, body)
	id := keys[0]
	now := s.opt.Now()
	seen, err := s.st.Seen(name, keys, now)
	if err != nil {
		s.logf("trigger %s: %v", name, err)
		jsonReply(w, http.StatusServiceUnavailable, reply{Status: "refused", Reason: "delivery record unavailable"})
		return
	}
	if seen {
		refuse(http.StatusConflict, "replay: delivery seen in the last 24h", map[string]any{"delivery": id, "body": keys[len(keys)-1]})
		return
	}
	forget := func() {
		if err := s.st.Forget(name, keys); err != nil {
			s.logf("trigger %s: %v", name, err)
		}
	}
	event := EventName(t.Source, r.Header)
	if !Listed(t, event) {
		forget() // ran nothing: taken if the trigger comes to list it
		s.audit(audit.Entry{Event: "serve.hook", Subject: name, Outcome: "ignored", Detail: map[string]any{"delivery": id, "event": event}})
		jsonReply(w, http.StatusAccepted, reply{Status: "ignored", Reason: "event not listed"})
		return
	}
	e, err := Normalise(name, t.Source, event, id, now, body)
	if err != nil {
		forget()
		refuse(http.StatusBadRequest, "body: "+err.Error(), map[string]any{"delivery": id})
		return
	}
	if e.SenderBot && t.DropsBots() {
		forget()
		s.audit(audit.Entry{Event: "serve.hook", Subject: name, Outcome: "ignored", Detail: map[string]any{"delivery": id, "event": event, "bot": e.Sender}})
		jsonReply(w, http.StatusAccepted, reply{Status: "ignored", Reason: "sent by a bot"})
		return
	}
	if s.isDraining() {
		forget()
		jsonReply(w, http.StatusServiceUnavailable, reply{Status: "refused", Reason: "shutting down"})
		return
	}
	if err := s.opt.Runner.Check(t.Playbook); err != nil {
		forget()
		refuse(http.StatusForbidden, "playbook may not run: "+firstLine(err.Error()), map[string]any{"delivery": id})
		s.deliver(channel.Notice{ID: "hook:" + name + ":" + id, Text: "trigger " + name + ": a delivery was refused: " + err.Error()})
		return
	}
	jobID, folded, err := s.enqueue(name, t.Source, t.Playbook, t.DebounceDuration(), e)
	var sh *Shed
	if errors.As(err, &sh) {
		forget()
		s.shed(w, name, id, e.Sender, sh)
		return
	}
	if err != nil {
		forget()
		s.logf("trigger %s: %v", name, err)
		jsonReply(w, http.StatusServiceUnavailable, reply{Status: "refused", Reason: "not queued"})
		return
	}
	s.audit(audit.Entry{Event: "serve.hook", Subject: name, Outcome: "queued",
		Detail: map[string]any{"delivery": id, "event": event, "job": jobID, "sender": e.Sender, "debounced": folded}})
	s.kick()
	jsonReply(w, http.StatusAccepted, reply{Status: "queued", Job: jobID})
}

func (s *Service) isDraining() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.draining
}

// enqueue queues a run of playbook for event e, or folds e into the waiting
// run with the same key whose debounce window is still open, the owner's
// into the owner's and a stranger's into strangers' (a stranger's event
// never rides the owner's lane, nor the owner's a stranger's); a delivery
// beyond the queue's limits is not queued (the error is a *Shed). It
// returns the run's job. e.Sender is who the limits count: a trigger
// source sets it (GitHub's sender login, a mail's From address), and a
// sender who is the trigger's owner_login is the owner (enqueueFrom).
func (s *Service) enqueue(trigger, source, pb string, debounce time.Duration, e Event) (string, bool, error) {
	return s.enqueueFrom(trigger, source, pb, debounce, e, ownerOf(s.opt.Config.Triggers[trigger], e.Sender))
}

// enqueueFrom is enqueue with the verdict on the sender given: owner, the
// trigger's owner (a mail trigger's allowed sender), is not limited per
// sender and has a lane of the queue strangers cannot fill.
func (s *Service) enqueueFrom(trigger, source, pb string, debounce time.Duration, e Event, owner bool) (string, bool, error) {
	ev, err := json.MarshalIndent(e, "", " ")
	if err != nil {
		return "", false, err
	}
	now := s.opt.Now().UTC()
	t := s.opt.Config.Triggers[trigger]
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	if debounce > 0 {
		for _, j := range s.q.jobs {
			if j.State == Queued && j.Key == e.Key() && j.Owner == owner && now.Before(j.NotBefore) {
				old, oldEv := j.Deliveries, j.Event
				j.Deliveries, j.Event = append(j.Deliveries, e.Delivery), ev
				if err := s.q.save(j); err != nil {
					j.Deliveries, j.Event = old, oldEv
					return "", false, err
				}
				return j.ID, true, nil
			}
		}
	}
	if sh := s.admit(trigger, t, e.Sender, owner, s.q.count(trigger), now); sh != nil {
		return "", false, sh
	}
	s.q.seq++
	j := &Job{ID: newJobID(now), Seq: s.q.seq, Trigger: trigger, Source: source, Playbook: pb, Key: e.Key(), Sender: e.Sender, Owner: owner,
		State: Queued, Queued: now, NotBefore: now.Add(debounce), Deliveries: []string{e.Delivery}, Event: ev}
	if err := s.q.save(j); err != nil {
		return "", false, err
	}
	s.q.jobs[j.ID] = j
	if !owner {
		s.lim.started(trigger, e.Sender, now)
	}
	return j.ID, false, nil
}

// precheck reports, before the delivery is recorded, whether a signed
// delivery of trigger name would be shed now, and its sender: a flood of
// deliveries beyond the limits costs no write but its audit line.
func (s *Service) precheck(name string, t config.Trigger, h http.Header, body []byte) (*Shed, string) {
	event := EventName(t.Source, h)
	if !Listed(t, event) {
		return nil, ""
	}
	e, err := Normalise(name, t.Source, event, "", s.opt.Now(), body)
	if err != nil || (e.SenderBot && t.DropsBots()) {
		return nil, ""
	}
	owner := ownerOf(t, e.Sender)
	now := s.opt.Now()
	s.q.mu.Lock()
	c := s.q.count(name)
	s.q.mu.Unlock()
	if t.DebounceDuration() > 0 && s.folds(e.Key(), owner, now) {
		return nil, e.Sender
	}
	return s.admit(name, t, e.Sender, owner, c, now), e.Sender
}

// folds reports whether a waiting run with key, of the owner or of
// strangers (owner), is still open to debounce.
func (s *Service) folds(key string, owner bool, now time.Time) bool {
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	for _, j := range s.q.jobs {
		if j.State == Queued && j.Key == key && j.Owner == owner && now.Before(j.NotBefore) {
			return true
		}
	}
	return false
}

// shed answers a delivery refused by a limit at once, audits it and counts
// it for the owner's notice and the status.
func (s *Service) shed(w http.ResponseWriter, name, id, sender string, sh *Shed) {
	s.lim.shedOne(name, sender, shedKind(sh), s.opt.Now())
	s.audit(audit.Entry{Event: "serve.hook", Subject: name, Outcome: "shed",
		Detail: map[string]any{"delivery": id, "sender": sender, "reason": sh.Reason}})
	jsonReply(w, sh.Code, reply{Status: "shed", Reason: sh.Reason})
}
