package launcher

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"

	"github.com/hobbs-agent/hobbs/src/engine"
	"github.com/hobbs-agent/hobbs/src/errs"
)

// The engine's event stream: how the launcher learns that a session's
// container died or was removed.

// events are what the launcher learns from the engine's event stream.
type events struct {
	proxyDied <-chan struct{}
	agentDied <-chan struct{}
	agentGone <-chan struct{} // the agent was removed
}

// eventLine is one `events --format '{{json .}}'` line: Docker's fields,
// and podman's (ID, Status).
type eventLine struct {
	Type   string
	Action string
	Status string
	ID     string
	Actor  struct {
		ID         string
		Attributes map[string]string
	}
}

// event is what the launcher needs of one engine event.
type event struct {
	died    bool   // a container died: id
	removed bool   // a container was removed: id
	id      string // the container that died or was removed
}

// parseEvent reads one `events --format '{{json .}}'` line, Docker's or
// podman's.
func parseEvent(line []byte) (event, bool) {
	var l eventLine
	if json.Unmarshal(line, &l) != nil {
		return event{}, false
	}
	action := l.Action
	if action == "" {
		action = l.Status
	}
	id := l.Actor.ID
	if id == "" {
		id = l.ID
	}
	switch {
	case strings.HasPrefix(action, "die") && l.Type == "container": // podman: died
		return event{died: true, id: id}, true
	case (action == "destroy" || action == "remove") && l.Type == "container": // podman: remove
		return event{removed: true, id: id}, true
	}
	return event{}, false
}

// watch follows the engine's events about the session's containers, whose
// ids are known once created is closed. It replays the last minute, so
// nothing that happened before the stream was up is missed (the containers'
// ids are new: older events cannot match). A stream that ends only means the
// launcher learns of deaths later (when `docker start` returns).
func (s *Session) watch(ctx context.Context, created <-chan struct{}) (*events, error) {
	pdied, adied, agone := make(chan struct{}), make(chan struct{}), make(chan struct{})
	ev := &events{proxyDied: pdied, agentDied: adied, agentGone: agone}
	cmd, err := s.Engine.Command(context.WithoutCancel(ctx), nil, "events", "--since", "60s",
		"--filter", "type=container", "--filter", "event=die", "--filter", "event=destroy", "--format", "{{json .}}")
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "watch engine events")
	}
	if err := cmd.Start(); err != nil {
		return nil, errs.Wrap(errs.Failure, err, "watch engine events")
	}
	s.events = cmd
	once := func(c chan struct{}, what string) {
		select {
		case <-c:
		default:
			engine.Tracef("session: event: %s", what)
			close(c)
		}
	}
	go func() {
		<-created
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			e, ok := parseEvent(sc.Bytes())
			switch {
			case !ok:
			case e.removed:
				if sameID(e.id, s.agentID) {
					once(agone, "agent removed")
				}
			case e.died:
				if sameID(e.id, s.agentID) {
					once(adied, "agent died")
				} else if sameID(e.id, s.proxyID) {
					once(pdied, "proxy died")
				}
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	return ev, nil
}

// sameID compares a full container id with one of the engine's (either may
// be abbreviated).
func sameID(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	return strings.HasPrefix(a, b) || strings.HasPrefix(b, a)
}
