package launcher

import (
	"context"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hobbs-agent/hobbs/src/engine"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// The agent's start and end: attached to the launcher's streams, or
// started by another process (ReadyFile) and followed by the engine's
// events.

// agentRun is the running `docker start --attach` of the agent.
type agentRun struct {
	cmd  *exec.Cmd
	done chan error
}

// startAgent starts the created agent container attached to our streams.
// Its entry point waits for the proxy before running the command.
func (s *Session) startAgent(ctx context.Context) (*agentRun, error) {
	args := []string{"start", "--attach", "--interactive", s.Name}
	if s.Detached {
		// The agent's input stays open for hobbs attach.
		args = []string{"start", "--attach", s.Name}
	}
	cmd, err := s.Engine.Command(context.WithoutCancel(ctx), nil, args...)
	if err != nil {
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = s.Stdin, s.Stdout, s.Stderr
	if err := cmd.Start(); err != nil {
		return nil, errs.Wrap(errs.Failure, err, "start agent")
	}
	a := &agentRun{cmd: cmd, done: make(chan error, 1)}
	go func() { err := cmd.Wait(); engine.Tracef("session: agent start returned"); a.done <- err }()
	return a, nil
}

// awaitAgent tells the process that starts the agent that it may
// (ReadyFile) and follows the agent by the engine's events: done once it
// died (its exit code is that process's to report).
func (s *Session) awaitAgent(ev *events) (*agentRun, error) {
	if err := safefile.Write(s.ReadyFile, []byte(s.Name+"\n"), 0o600); err != nil {
		return nil, errs.Wrap(errs.Failure, err, "ready file")
	}
	a := &agentRun{done: make(chan error, 1)}
	// A starter that never starts the agent (it was killed) must not leave
	// the session waiting: unstarted after agentStartWait, it is over.
	unstarted := make(chan struct{})
	go func() {
		deadline := time.Now().Add(agentStartWait)
		for time.Now().Before(deadline) {
			time.Sleep(500 * time.Millisecond)
			out, err := s.Engine.Output(context.Background(), "inspect", "--format", "{{.State.Status}}", s.Name)
			if err != nil || strings.TrimSpace(out) != "created" {
				return
			}
		}
		close(unstarted)
	}()
	go func() {
		select {
		case <-ev.agentDied:
		case <-ev.agentGone:
		case <-unstarted:
			s.Progress("the agent was not started within %v; ending the session", agentStartWait)
		}
		engine.Tracef("session: agent ended (events)")
		a.done <- nil
	}()
	return a, nil
}

// agentStartWait is how long a launcher with a ReadyFile waits for the
// agent to be started.
const agentStartWait = 60 * time.Second

// signal sends sig to the agent's command: through the docker CLI that
// started it, or the engine when another process did.
func (a *agentRun) signal(s *Session, sig syscall.Signal) {
	if a.cmd != nil {
		_ = a.cmd.Process.Signal(sig)
		return
	}
	_, _ = s.Engine.Output(context.Background(), "kill", "--signal", strconv.Itoa(int(sig)), s.Name)
}

// result turns the docker CLI's end into the agent's exit code.
func (a *agentRun) result(werr error) (int, error) {
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		return ee.ExitCode(), nil
	}
	if werr != nil {
		return 0, errs.Wrap(errs.Failure, werr, "agent")
	}
	return 0, nil
}

// stop ends an interrupted session: the docker CLI passes SIGTERM on to the
// command; after a grace period the container is removed.
func (a *agentRun) stop(s *Session) int {
	a.signal(s, syscall.SIGTERM)
	select {
	case <-a.done:
	case <-time.After(5 * time.Second):
		a.kill(s)
	}
	return errs.Interrupted
}

// wait waits for the agent to end (a stop is ending it), removing it when
// it has not within the stop's own timeout.
func (a *agentRun) wait(s *Session) {
	select {
	case <-a.done:
	case <-time.After((proxyStopTime + 5) * time.Second):
		a.kill(s)
	}
}

// kill removes the agent container and waits for the docker CLI to end.
func (a *agentRun) kill(s *Session) {
	_, _ = s.Engine.Output(context.Background(), "rm", "-f", s.Name)
	select {
	case <-a.done:
	case <-time.After(2 * time.Second): // the CLI may not notice a removed container
		if a.cmd == nil {
			return
		}
		_ = a.cmd.Process.Kill()
		<-a.done
	}
}
