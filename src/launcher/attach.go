package launcher

import (
	"context"
	"fmt"
	"strings"

	"github.com/hobbs-agent/hobbs/src/engine"
	"github.com/hobbs-agent/hobbs/src/errs"
)

// CheckAttach refuses an attach to session name whose agent has a
// terminal (a session started with --detach or on a terminal) when ours
// has none (stdinTTY false): the engine would refuse it only after saying
// so in its own words, and the attach would look like a detach.
func CheckAttach(ctx context.Context, e engine.CLI, name string, stdinTTY bool) error {
	if stdinTTY {
		return nil
	}
	out, err := e.Output(ctx, "inspect", "--format", "{{.Config.Tty}}", name)
	if err != nil || strings.TrimSpace(out) != "true" {
		return nil // the attach itself says what is wrong
	}
	return errs.Usagef("hobbs attach %s needs a terminal: the session's agent has one, and this input is not a terminal", name).
		Advise(AttachNeedsTerminal, "name", name)
}

// AfterAttach says what happened when an attach to session name returned
// with code (the engine's attach: the agent's exit code once it ended, 0
// after a detach): the session still runs (a detach: the Detached notice),
// or it ended, which is an error with the agent's code, or 1 when that was
// 0 (the session the user was attached to is gone; whoever ended it, hobbs
// attach says so).
func AfterAttach(ctx context.Context, e engine.CLI, name string, code int) (errs.Advice, error) {
	out, err := e.Output(ctx, "inspect", "--format", "{{.State.Running}}", name)
	if err == nil && strings.TrimSpace(out) == "true" {
		return errs.NewAdvice(Detached, "name", name), nil
	}
	if engine.Unreachable(err) != nil {
		return errs.Advice{}, err
	}
	why := fmt.Sprintf("its command exited with %d", code)
	switch code {
	case ExitStopped:
		why = "exit 143: stopped from elsewhere, by hobbs stop or the engine"
	case 137:
		why = "exit 137: killed from elsewhere, by the engine or the kernel (out of memory?)"
	}
	if code == 0 {
		code = errs.Failure
	}
	return errs.Advice{}, (&errs.Error{Code: code, Msg: fmt.Sprintf("session %s ended while attached (%s)", name, why)}).
		Advise(EndedAttached, "name", name)
}
