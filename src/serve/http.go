package serve

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/channel"
	"github.com/hobbs-agent/hobbs/src/task"
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
	Status string `json:"status"` // queued, ignored, refused
	Task   string `json:"task,omitempty"`
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
	if r.ContentLength > MaxBody {
		refuse(http.StatusRequestEntityTooLarge, "body over 1 MiB", nil)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			refuse(http.StatusRequestEntityTooLarge, "body over 1 MiB", nil)
			return
		}
		refuse(http.StatusBadRequest, "body not read", nil)
		return
	}
	if err := Verify(t.Source, secret, r.Header, body); err != nil {
		refuse(http.StatusUnauthorized, "bad signature", nil)
		return
	}
	id := DeliveryID(t.Source, r.Header, body)
	now := s.opt.Now()
	seen, err := s.st.Seen(name, id, now)
	if err != nil {
		s.logf("trigger %s: %v", name, err)
		jsonReply(w, http.StatusServiceUnavailable, reply{Status: "refused", Reason: "delivery record unavailable"})
		return
	}
	if seen {
		refuse(http.StatusConflict, "replay: delivery seen in the last 24h", map[string]any{"delivery": id})
		return
	}
	event := EventName(t.Source, r.Header)
	if !Listed(t, event) {
		s.audit(audit.Entry{Event: "serve.hook", Subject: name, Outcome: "ignored", Detail: map[string]any{"delivery": id, "event": event}})
		jsonReply(w, http.StatusAccepted, reply{Status: "ignored", Reason: "event not listed"})
		return
	}
	forget := func() {
		if err := s.st.Forget(name, id); err != nil {
			s.logf("trigger %s: %v", name, err)
		}
	}
	e, err := Normalise(name, t.Source, event, id, now, body)
	if err != nil {
		forget()
		refuse(http.StatusBadRequest, "body: "+err.Error(), map[string]any{"delivery": id})
		return
	}
	if e.SenderBot && t.DropsBots() {
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
	taskID, folded, err := s.enqueue(name, t.Source, t.Playbook, t.DebounceDuration(), e)
	if err != nil {
		forget()
		s.logf("trigger %s: %v", name, err)
		jsonReply(w, http.StatusServiceUnavailable, reply{Status: "refused", Reason: "not queued"})
		return
	}
	s.audit(audit.Entry{Event: "serve.hook", Subject: name, Outcome: "queued",
		Detail: map[string]any{"delivery": id, "event": event, "task": taskID, "debounced": folded}})
	s.kick()
	jsonReply(w, http.StatusAccepted, reply{Status: "queued", Task: taskID})
}

func (s *Service) isDraining() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.draining
}

// enqueue queues a run of playbook for event e, or folds e into the queued
// run with the same key whose debounce window is still open. It returns the
// run's task.
func (s *Service) enqueue(trigger, source, pb string, debounce time.Duration, e Event) (string, bool, error) {
	var id string
	folded := false
	now := s.opt.Now().UTC()
	err := s.st.update(func(q *queueFile) error {
		if debounce > 0 {
			for _, j := range q.Jobs {
				if j.State == Queued && j.Key == e.Key() && now.Before(j.NotBefore) {
					if err := s.st.writeEvent(j.Task, e); err != nil {
						return err
					}
					j.Deliveries = append(j.Deliveries, e.Delivery)
					id, folded = j.Task, true
					return nil
				}
			}
		}
		t, err := s.opt.Tasks.Start(task.RunTitle(pb), "hobbs", pb)
		if err != nil {
			return err
		}
		id = t.ID
		if err := s.st.writeEvent(id, e); err != nil {
			_, _ = s.opt.Tasks.Done(id, task.DoneOptions{Outcome: task.Failed, Retro: "## Run\n\n- not queued: " + err.Error() + "\n"})
			return err
		}
		q.Jobs = append(q.Jobs, &Job{Task: id, Trigger: trigger, Source: source, Playbook: pb, Key: e.Key(), State: Queued,
			Queued: now, NotBefore: now.Add(debounce), Deliveries: []string{e.Delivery}})
		return nil
	})
	return id, folded, err
}
