package launcher

import (
	"context"
	"fmt"
	"strings"

	"github.com/hobbs-agent/hobbs/src/engine"
	"github.com/hobbs-agent/hobbs/src/errs"
)

// DetachNote is what hobbs run and hobbs attach say once, on a terminal,
// as they attach it to session name's agent: how to leave it running and
// how to come back. Ctrl-P Ctrl-Q is docker's and podman's default detach
// sequence.
func DetachNote(name string) string {
	return fmt.Sprintf("attached to session %s: Ctrl-P Ctrl-Q detaches and the session goes on (hobbs attach %s comes back)", name, name)
}

// AfterAttach says what happened when an attach to session name returned
// with code (the engine's attach: the agent's exit code once it ended, 0
// after a detach): the session still runs (a detach), or it ended, which
// is an error with the agent's code, or 1 when that was 0 (the session the
// user was attached to is gone; whoever ended it, hobbs attach says so).
func AfterAttach(ctx context.Context, e engine.CLI, name string, code int) (string, error) {
	out, err := e.Output(ctx, "inspect", "--format", "{{.State.Running}}", name)
	if err == nil && strings.TrimSpace(out) == "true" {
		return fmt.Sprintf("detached from session %s, which goes on: hobbs attach %s, hobbs logs %s, hobbs stop %s", name, name, name, name), nil
	}
	if engine.Unreachable(err) != nil {
		return "", err
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
	return "", (&errs.Error{Code: code, Msg: fmt.Sprintf("session %s ended while attached (%s)", name, why)}).
		Advise(EndedAttached, "name", name)
}
