package launcher

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hobbs-agent/hobbs/src/engine"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/plan"
)

// The proxy's start, health and stop.

// stopProxy stops the proxy with SIGTERM: it closes what tunnels are left
// and writes every audit line before it exits. `rm -f` would kill it outright
// and lose the lines of tunnels still open or not yet written.
func (s *Session) stopProxy(ctx context.Context) error {
	_, err := s.Engine.Output(ctx, "stop", "--time", strconv.Itoa(proxyStopTime), plan.ProxyName(s.Name))
	if err != nil && !engine.IsNotFound(err) {
		return err
	}
	return nil
}

// proxyStopped waits until the proxy has exited: stop (its stop's future)
// has returned or the engine has reported its death.
func (s *Session) proxyStopped(stop *future) error {
	var died <-chan struct{}
	if s.ev != nil {
		died = s.ev.proxyDied
	}
	select {
	case <-stop.done:
		return stop.err
	case <-died:
		return nil
	}
}

// stopProxyEarly starts stopping the proxy (the agent has died).
func (s *Session) stopProxyEarly() {
	if s.proxyStop == nil {
		s.proxyStop = spawn(func() error { return s.stopProxy(context.Background()) })
	}
}

// startProxy starts the created proxy container.
func (s *Session) startProxy(ctx context.Context) error {
	if _, err := s.Engine.Output(ctx, "start", plan.ProxyName(s.Name)); err != nil {
		if n := s.egressNetwork(); n != "" && n != plan.EgressNetwork(s.Name) && engine.IsNotFound(err) &&
			strings.Contains(err.Error(), n) {
			// The engine checks a container's network only when it starts.
			return errs.Missingf("the egress network %s does not exist: %s", n, firstLine(err.Error())).
				Advise(NoEgressNetwork, "network", n)
		}
		return s.proxyFailed(firstLine(err.Error()))
	}
	return nil
}

// healthDelay is how long after the proxy's start the launcher first checks
// its health itself. The agent's entry point checks it before the command
// runs, and a proxy that exits is reported by the engine's events at once:
// the launcher's check (a `docker exec`, costly on a busy machine) only
// catches a proxy that runs but never answers, and is not needed at all
// when the agent ends first (scripts, tests).
const healthDelay = time.Second

// waitProxy waits until the started proxy answers its health check.
func (s *Session) waitProxy(ctx context.Context, died <-chan struct{}) error {
	e := s.Engine
	deadline := time.Now().Add(s.ProxyTimeout)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-died:
		return s.proxyFailed("it exited at start (its output below; /home/dev/.hobbs is your instance directory)")
	case <-time.After(healthDelay):
	}
	for {
		_, err := e.Output(ctx, "exec", plan.ProxyName(s.Name), "hobbs", "proxy", "health", "--addr", "unix:"+plan.ProxySocket)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		select {
		case <-died:
			return s.proxyFailed("it exited at start (its output below; /home/dev/.hobbs is your instance directory)")
		default:
		}
		if time.Now().After(deadline) {
			return s.proxyFailed(fmt.Sprintf("not healthy after %v: %s", s.ProxyTimeout, firstLine(err.Error())))
		}
		select {
		case <-died:
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// proxyFailed builds the error for a proxy that did not come up or died,
// with the end of its output.
func (s *Session) proxyFailed(why string) error {
	msg := "egress proxy failed: " + why
	if c, err := s.Engine.Command(context.Background(), nil, "logs", "--tail", "20", plan.ProxyName(s.Name)); err == nil {
		if out, _ := c.CombinedOutput(); len(bytes.TrimSpace(out)) > 0 {
			msg += "\nproxy output:\n" + strings.TrimSpace(string(out))
		}
	}
	return errs.Failf("%s", msg).Advise(ProxyFailed)
}
