package engine

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/hobbs-agent/hobbs/src/errs"
)

// Command returns an exec.Cmd running the CLI with args. Its environment is
// the caller's environment with env (NAME=value pairs) set on top: this is
// how values reach `-e NAME` flags without ever appearing in any argv.
func (c CLI) Command(ctx context.Context, env []string, args ...string) (*exec.Cmd, error) {
	p, err := c.Path()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, p, args...)
	cmd.Env = MergeEnv(os.Environ(), env)
	return cmd, nil
}

// MergeEnv returns base with every NAME=value of over replacing any entry of
// the same NAME.
func MergeEnv(base, over []string) []string {
	if len(over) == 0 {
		return base
	}
	drop := map[string]bool{}
	for _, kv := range over {
		name, _, _ := strings.Cut(kv, "=")
		drop[name] = true
	}
	out := make([]string, 0, len(base)+len(over))
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if !drop[name] {
			out = append(out, kv)
		}
	}
	return append(out, over...)
}

// Stream runs the CLI with args, copying its stdout and stderr to w (both
// may be the same writer). It is for long operations whose output is
// progress: build, pull.
func (c CLI) Stream(ctx context.Context, w io.Writer, env []string, args ...string) error {
	cmd, err := c.Command(ctx, env, args...)
	if err != nil {
		return err
	}
	var tail tailBuffer
	out := io.MultiWriter(w, &tail)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return &errs.Error{Code: errs.Interrupted, Msg: fmt.Sprintf("%s %s: interrupted", c.Bin, args[0])}
		}
		msg := strings.TrimSpace(tail.String())
		if IsUnreachableMsg(msg) {
			return c.unreachable(msg)
		}
		if IsNoInitMsg(msg) {
			return c.noInit(msg)
		}
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = strings.TrimSpace(msg[i+1:])
		}
		if msg == "" {
			msg = err.Error()
		}
		return &errs.Error{Code: errs.Failure, Msg: fmt.Sprintf("%s %s failed: %s", c.Bin, args[0], msg)}
	}
	return nil
}

// tailBuffer keeps the last few KiB written to it, for error messages.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 4096 {
		t.buf = t.buf[len(t.buf)-4096:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// IsPodman reports whether the CLI is podman (by its name), which needs
// --userns=keep-id for files to be owned by the invoking user.
func (c CLI) IsPodman() bool {
	return strings.Contains(strings.ToLower(filepath.Base(c.Bin)), "podman")
}

// Exists runs the CLI with args (an inspect) and reports whether it
// succeeded; an engine that cannot be reached is an error, "no such object"
// (in docker's words or podman's) is false.
func (c CLI) Exists(ctx context.Context, args ...string) (bool, error) {
	_, err := c.Output(ctx, args...)
	switch {
	case err == nil:
		return true, nil
	case IsNotFound(err):
		return false, nil
	}
	return false, err
}
