package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/hobbs-agent/hobbs/src/errs"
)

// fakeCLI writes a CLI that prints msg on stderr and exits 1.
func fakeCLI(t *testing.T, msg string) CLI {
	p := filepath.Join(t.TempDir(), "docker")
	if err := os.WriteFile(p, []byte("#!/bin/sh\necho '"+msg+"' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return New(p)
}

// TestUnreachable: a CLI that says it cannot reach its engine gives a
// Missing error (exit 3) with the fix, found through joins; any other
// failure stays a Failure.
func TestUnreachable(t *testing.T) {
	for _, msg := range []string{
		"Cannot connect to the Docker daemon at unix:///nonexistent.sock. Is the docker daemon running?",
		"permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock: Get ...",
		"Cannot connect to Podman. Please verify your connection to the Linux system using `podman system connection list`",
	} {
		c := fakeCLI(t, msg)
		_, err := c.Output(context.Background(), "ps", "-aq")
		if errs.Code(err) != errs.Missing || errs.Hint(err) == "" || Unreachable(err) == nil {
			t.Errorf("%q: code %d hint %q unreachable %v", msg, errs.Code(err), errs.Hint(err), Unreachable(err) != nil)
		}
		joined := errors.Join(errs.Failf("other"), err)
		if u := Unreachable(joined); u == nil || errs.Code(u) != errs.Missing {
			t.Errorf("%q: not found in a join", msg)
		}
		if _, err := c.ServerVersion(context.Background()); errs.Code(err) != errs.Missing || errs.Hint(err) == "" {
			t.Errorf("%q: ServerVersion: code %d %v", msg, errs.Code(err), err)
		}
	}
	_, err := fakeCLI(t, "Error: No such container: x").Output(context.Background(), "rm", "x")
	if errs.Code(err) != errs.Failure || Unreachable(err) != nil {
		t.Errorf("no such container: code %d %v", errs.Code(err), err)
	}
}
