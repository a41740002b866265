// Package engine finds and talks to the container engine CLI (docker, or
// podman through HOBBS_DOCKER / config engine). Hobbs drives the engine only
// through its CLI so that any Docker-compatible engine works.
package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/hobbs-agent/hobbs/src/doctor"
	"github.com/hobbs-agent/hobbs/src/errs"
)

// CLI is a container engine command-line tool.
type CLI struct {
	Bin string // "docker", "podman", or a path
}

// New returns the CLI named by bin (config engine, already overridden by
// HOBBS_DOCKER when set); "" means docker.
func New(bin string) CLI {
	if bin == "" {
		bin = "docker"
	}
	return CLI{Bin: bin}
}

// Known are the engine names config.yaml's engine: and HOBBS_DOCKER take
// besides a path to the CLI.
var Known = []string{"docker", "podman"}

// IsKnown reports whether name is an engine Hobbs knows (docker, podman)
// or a path to a CLI (it holds a slash).
func IsKnown(name string) bool {
	return name == "docker" || name == "podman" || strings.Contains(name, "/")
}

// Path resolves the binary, or returns a Missing error with advice: a name
// Hobbs does not know is a setting to correct, a known one a CLI to
// install.
func (c CLI) Path() (string, error) {
	p, err := exec.LookPath(c.Bin)
	if err == nil {
		return p, nil
	}
	e := errs.Missingf("container engine CLI %q not found", c.Bin)
	switch {
	case !IsKnown(c.Bin):
		return "", e.Advise(UnknownEngine, "bin", c.Bin, "known", strings.Join(Known, " or "))
	case c.IsPodman():
		return "", e.Advise(NoPodman)
	case strings.Contains(c.Bin, "/"):
		return "", e.Advise(NoExecutable, "bin", c.Bin)
	}
	return "", e.Advise(NoDocker)
}

// Output runs the CLI with args and returns stdout; stderr is folded into the
// error.
func (c CLI) Output(ctx context.Context, args ...string) (string, error) {
	return c.OutputWith(ctx, nil, nil, args...)
}

// OutputWith is Output with env (NAME=value pairs) added to the CLI's
// environment and stdin, when not nil, as its standard input.
func (c CLI) OutputWith(ctx context.Context, env []string, stdin io.Reader, args ...string) (string, error) {
	cmd, err := c.Command(ctx, env, args...)
	if err != nil {
		return "", err
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, &stdout, &stderr
	done := TraceCall(args)
	err = cmd.Run()
	done(err)
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return "", &errs.Error{Code: errs.Timeout, Msg: fmt.Sprintf("%s %s: timed out", c.Bin, args[0])}
		}
		return "", c.CallError(args[0], msg)
	}
	return strings.TrimSpace(stdout.String()), nil
}

// CallError is the error of a CLI call (sub: its subcommand) that failed
// with msg on its standard error: Unreachable when msg says the CLI could
// not reach the engine, a Failure otherwise.
func (c CLI) CallError(sub, msg string) error {
	if IsUnreachableMsg(msg) {
		return c.unreachable(msg)
	}
	if IsNoInitMsg(msg) {
		return c.noInit(msg)
	}
	e := &errs.Error{Code: errs.Failure, Msg: fmt.Sprintf("%s %s: %s", c.Bin, sub, msg)}
	if IsNotFoundMsg(msg) {
		return &NotFoundError{err: e}
	}
	return e
}

// NotFoundError is the error of a CLI call about an object (image,
// container, volume, network) the engine does not have. Its message is the
// CLI's own, which names the object and says it is missing in the words of
// either engine's CLI ("No such image", "image not known", "network not
// found").
type NotFoundError struct{ err *errs.Error }

func (n *NotFoundError) Error() string { return n.err.Error() }
func (n *NotFoundError) Unwrap() error { return n.err }

// IsNotFound reports whether err (or any error it wraps or joins) says the
// engine has no such object.
func IsNotFound(err error) bool {
	var n *NotFoundError
	return errors.As(err, &n)
}

// notFoundMsgs are what the docker and podman CLIs say of an object they do
// not have (lower case). Podman: "image not known", "no container with name
// or ID … found: no such container", "no such volume", "unable to find
// network …: network not found".
var notFoundMsgs = []string{"no such ", "not found", "not known", "does not exist"}

// IsNotFoundMsg reports whether a CLI's error output says the object it was
// asked about does not exist.
func IsNotFoundMsg(msg string) bool {
	m := strings.ToLower(msg)
	for _, s := range notFoundMsgs {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// IsNoInitMsg reports whether a CLI's error output says it has no init
// binary for --init (podman without catatonit).
func IsNoInitMsg(msg string) bool {
	return strings.Contains(strings.ToLower(msg), "container-init binary not found")
}

// noInit is the error of a call that needed the engine's init binary
// (--init) and found none: podman runs catatonit, packaged apart from it.
func (c CLI) noInit(msg string) error {
	line := firstLine(msg)
	for _, l := range strings.Split(msg, "\n") {
		if IsNoInitMsg(l) {
			line = strings.TrimSpace(l) // past podman's warnings
			break
		}
	}
	return (&errs.Error{Code: errs.Missing, Msg: fmt.Sprintf("%s has no init binary for --init: %s", c.Bin, line)}).
		Advise(NoInit)
}

// UnreachableError is the error of a CLI call that could not reach the
// engine (its daemon is not running, its socket is not there or not the
// user's to use). It is a Missing error (exit 3) with advice. Every later
// call would fail the same way, so callers give up at once rather than
// retry or clean up.
type UnreachableError struct{ err *errs.Error }

func (u *UnreachableError) Error() string { return u.err.Error() }
func (u *UnreachableError) Unwrap() error { return u.err }

func (c CLI) unreachable(msg string) *UnreachableError {
	e := &errs.Error{Code: errs.Missing, Msg: fmt.Sprintf("container engine not reachable: %s: %s", c.Bin, firstLine(msg)),
		Advice: c.UnreachableAdvice()}
	return &UnreachableError{err: e}
}

// UnreachableAdvice is the advice for an engine the CLI could not reach.
// When a setting chose where the engine is (DOCKER_HOST, then
// DOCKER_CONTEXT or the docker CLI's current context; CONTAINER_HOST for
// podman), the engine it names is the one that did not answer, and the
// advice names the setting: starting the local engine would not help.
// Otherwise it is the local engine that is not running, or not the user's
// to use.
func (c CLI) UnreachableAdvice() errs.Advice {
	if c.IsPodman() {
		if h := os.Getenv("CONTAINER_HOST"); h != "" {
			return errs.NewAdvice(PodmanHostUnreachable, "host", h)
		}
		return errs.NewAdvice(PodmanUnreachable)
	}
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		return errs.NewAdvice(DockerHostUnreachable, "host", h)
	}
	if ctx := dockerContext(); ctx != "" && ctx != "default" {
		return errs.NewAdvice(ContextUnreachable, "context", ctx)
	}
	return errs.NewAdvice(DockerUnreachable)
}

// dockerContext is the docker CLI's context when DOCKER_HOST is not set:
// DOCKER_CONTEXT, else currentContext in the CLI's config.json
// ($DOCKER_CONFIG, else ~/.docker); "" when neither names one.
func dockerContext() string {
	if c := os.Getenv("DOCKER_CONTEXT"); c != "" {
		return c
	}
	dir := os.Getenv("DOCKER_CONFIG")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(home, ".docker")
	}
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return ""
	}
	var cfg struct {
		CurrentContext string `json:"currentContext"`
	}
	if json.Unmarshal(b, &cfg) != nil {
		return ""
	}
	return cfg.CurrentContext
}

// Unreachable returns the UnreachableError in err's chain (or in any error
// it joins), or nil.
func Unreachable(err error) *UnreachableError {
	var u *UnreachableError
	if errors.As(err, &u) {
		return u
	}
	return nil
}

// unreachableMsgs are what the docker and podman CLIs say when they cannot
// reach their engine (lower case).
var unreachableMsgs = []string{
	"cannot connect to the docker daemon",                            // docker: no daemon, or no socket at DOCKER_HOST
	"permission denied while trying to connect to the docker daemon", // docker: the socket is not the user's
	"error during connect",                                           // docker: a TCP or npipe DOCKER_HOST
	"cannot connect to podman",                                       // podman remote, podman machine
	"unable to connect to podman socket",
}

// IsUnreachableMsg reports whether a CLI's error output says it could not
// reach the engine.
func IsUnreachableMsg(msg string) bool {
	m := strings.ToLower(msg)
	for _, u := range unreachableMsgs {
		if strings.Contains(m, u) {
			return true
		}
	}
	return false
}

// ServerVersion asks the engine for its version; an unreachable engine is a
// Missing error.
func (c CLI) ServerVersion(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	v, err := c.Output(ctx, "version", "--format", "{{.Server.Version}}")
	if err != nil {
		if errs.Code(err) == errs.Missing {
			return "", err
		}
		return "", &errs.Error{Code: errs.Missing, Msg: "container engine not reachable", Err: err, Advice: c.UnreachableAdvice()}
	}
	if v == "" {
		return "", errs.Missingf("container engine not reachable: %s reported no server version", c.Bin).Advise(NoServerVersion)
	}
	return v, nil
}

// Doctor is doctor's engine check: the engine's CLI is there and its
// engine answers; either missing is a missing dependency (doctor exits 3).
func Doctor(ctx context.Context, env *doctor.Env) []doctor.Result {
	if os.Getenv("HOBBS_CONTEXT") == "container" {
		return nil // inside the agent container there is no engine, by design
	}
	bin := "docker"
	if env.Config != nil {
		bin = env.Config.Engine
	}
	c := New(bin)
	p, err := c.Path()
	if err != nil {
		return []doctor.Result{{Status: doctor.Fail, Message: err.Error(), Advice: errs.AdviceOf(err), Missing: true}}
	}
	v, err := c.ServerVersion(ctx)
	if err != nil {
		return []doctor.Result{
			{Status: doctor.OK, Message: "engine CLI: " + p},
			{Status: doctor.Fail, Message: firstLine(err.Error()), Advice: errs.AdviceOf(err), Missing: true},
		}
	}
	return []doctor.Result{{Status: doctor.OK, Message: fmt.Sprintf("engine: %s (server %s)", p, v)}}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
