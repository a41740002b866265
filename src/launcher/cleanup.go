package launcher

import (
	"context"
	"errors"
	"time"

	"github.com/hobbs-agent/hobbs/src/engine"
	"github.com/hobbs-agent/hobbs/src/plan"
)

// Removing what a session made, and the sessions a stop names.

func (s *Session) rmContainer(ctx context.Context, name string) error {
	if _, err := s.Engine.Output(ctx, "rm", "-f", name); err != nil && !engine.IsNotFound(err) {
		return err
	}
	return nil
}

// cleanup removes what this run made (never the Claude state volume). The
// engine removed the agent when its command ended (--rm), unless the session
// ended otherwise; the proxy is stopped (SIGTERM: it writes its last audit
// lines), which may be under way already (stopProxyEarly). Once the agent is
// gone and the proxy stopped, the proxy is removed and, at the same time,
// the egress network (Docker removes a network that only stopped containers
// are attached to; an engine that refuses, podman, is asked again once the
// proxy is gone); the socket volume goes once both containers have. A
// headless run's seed container goes meanwhile, unless it went once read.
func (s *Session) cleanup() (cerr error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	defer func() {
		if s.events != nil {
			_ = s.events.Process.Kill()
			_ = s.events.Wait()
		}
	}()
	none := spawn(func() error { return nil })
	seed := none
	if s.plan.Seed != nil && s.has("seed") {
		if seed = s.seedGone; seed == nil {
			seed = spawn(func() error { return s.rmContainer(ctx, s.plan.Seed.Name) })
		}
	}
	defer func() { cerr = errors.Join(cerr, seed.wait()) }()
	agent, proxy := none, none
	if s.has("agent") && !s.agentRemoved() {
		agent = spawn(func() error { return s.removeAgent(ctx) })
	}
	if s.proxyStop == nil && s.has("proxy") && s.scopeListable() {
		// No death event came (podman's end, or a session stopped): the
		// proxy is asked to list the state volume once the agent is gone,
		// and stopped after, rather than read through a helper.
		if agent.wait() == nil {
			s.askScope()
		}
		s.stopProxyEarly()
	}
	if s.proxyStop != nil { // already on its way (the agent died)
		proxy = s.proxyStop
	} else if s.has("proxy") {
		proxy = spawn(func() error { return s.stopProxy(ctx) })
	}
	// Once the engine has removed the agent, the state volume is read
	// (endScope) and the layers' volumes removed while the proxy stops:
	// the session's end waits for both.
	layers := none
	gone := agent.wait() == nil
	if gone {
		s.endScope(ctx, true)
		if s.layered() && s.has("agent") {
			layers = spawn(func() error { return s.removeLayerVolumes(ctx) })
		}
	}
	s.endScope(ctx, false) // the agent is not gone: only the helper goes
	defer layers.wait()    // the layers are merged once their volumes are gone
	// The proxy can be removed once it has exited: the engine's die event
	// comes before `docker stop` returns.
	stopped := s.proxyStopped(proxy)
	// Then the shares are neutralised and read for the provenance record's
	// end while the proxy and the rest are removed. Not sooner: the reading
	// would slow the stop's engine calls, whose end the session's end waits
	// for anyway.
	if gone {
		s.afterAgent()
		if stopped == nil {
			s.startSharesEnd(layers)
		}
	}
	if err := errors.Join(agent.wait(), stopped); err != nil {
		return err // the network and the volume are still in use
	}
	defer proxy.wait() // the stop's CLI, if it is still returning
	removed := none
	if s.has("proxy") {
		removed = spawn(func() error { return s.rmContainer(ctx, plan.ProxyName(s.Name)) })
	}
	network := none
	if s.has("egress") {
		network = spawn(func() error {
			n := plan.EgressNetwork(s.Name)
			if _, err := s.Engine.Output(ctx, "network", "rm", n); err == nil || engine.IsNotFound(err) {
				return nil
			}
			if removed.wait() != nil {
				return nil // reported below
			}
			if _, err := s.Engine.Output(ctx, "network", "rm", n); err != nil && !engine.IsNotFound(err) {
				return err
			}
			return nil
		})
	}
	err := removed.wait()
	if err == nil && s.has("run") {
		if _, verr := s.Engine.Output(ctx, "volume", "rm", s.plan.RunVolume); verr != nil && !engine.IsNotFound(verr) {
			err = verr
		}
	}
	return errors.Join(err, network.wait())
}

// removeAgent removes the agent container. The engine may be removing it
// already (--rm: its command ended while the session was being stopped), and
// refuses a second removal meanwhile: then the launcher waits for its
// destroy event, asking again now and then (the event stream may have
// ended), for removeAgentWait at most (engines word that refusal
// differently, so any error is retried until then).
func (s *Session) removeAgent(ctx context.Context) error {
	var gone <-chan struct{}
	if s.ev != nil {
		gone = s.ev.agentGone
	}
	ctx, cancel := context.WithTimeout(ctx, removeAgentWait)
	defer cancel()
	for {
		err := s.rmContainer(ctx, s.Name)
		if err == nil {
			return nil
		}
		if engine.Unreachable(err) != nil {
			return err // asking again would not help
		}
		select {
		case <-gone:
			return nil
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
			return err
		}
	}
}

const removeAgentWait = 10 * time.Second

// agentRemoved reports whether the engine has removed the agent container
// (its destroy event arrived). When its `start --attach` returned the
// command's status, the engine has removed it already, and the event is
// waited for a little.
func (s *Session) agentRemoved() bool {
	if s.ev == nil {
		return false
	}
	select {
	case <-s.ev.agentGone:
		return true
	default:
	}
	if !s.agentEnded {
		return false
	}
	select {
	case <-s.ev.agentGone:
		return true
	case <-time.After(250 * time.Millisecond):
		return false
	}
}
