package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/hobbs-agent/hobbs"
	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/egress"
	"github.com/hobbs-agent/hobbs/src/engine"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/launcher"
	"github.com/hobbs-agent/hobbs/src/vault"
)

// exitStatus is returned by commands whose exit code is another process's
// (hobbs run): Main exits with it and prints nothing.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func newRunCmd(a *app) *cobra.Command {
	var workspace, image, base, name, binary string
	var detach, detachedChild bool
	var readyFile string
	cmd := &cobra.Command{
		Use:   "run [flags] [-- COMMAND...]",
		Short: "Start a Hobbs session: the agent container behind the egress proxy",
		Long: `Start a session: Claude Code as Hobbs in a locked-down container whose only
way out is the egress proxy.

On first use run sets everything up: it creates the instance (hobbs init
--no-input) and the workspace directory, and gets the image: a release of
hobbs pulls its published image once; a development build builds the image
when its inputs changed (see hobbs build; hobbs version says which). Then it
starts the egress proxy (same image, hobbs proxy) with your policy, and the
agent with no network at all: its one way out is the proxy, reached through
a relay at 127.0.0.1:3128 (HTTP_PROXY).
The agent runs as your uid, with no capabilities, no-new-privileges, limits
from config.yaml, the workspace at ~/hobbs/workspace, the instance at
~/.hobbs (vault keys hidden; policy.yaml and config.yaml read-only), Claude
Code's state in a per-instance volume, vault-mapped env variables (never in
any command line). A terminal is allocated when you are on one. The proxy
joins the engine's default network (egress_network in config.yaml: session
for a network of the session's own, or a network's name).

The default command is claude in the workspace; -- COMMAND runs that instead.
hobbs run exits with the command's exit code, or 143 when hobbs stop ended
the session. On exit, Ctrl-C or SIGTERM it removes what it created (the
Claude state volume stays). An engine it cannot reach is exit 3.

On a terminal, the session's launcher runs in the background and the
terminal is attached to the agent: Ctrl-P Ctrl-Q detaches it and the
session goes on (hobbs attach NAME to come back). --detach starts the
session without attaching and prints its name once the agent runs. Run
commands in a session with hobbs exec NAME -- CMD, read a --detach
session's output with hobbs logs NAME (also after it ended), end it with
hobbs stop NAME.`,
		Example: `  hobbs run                                  # claude in ~/hobbs-workspace
  hobbs run --detach --name work             # in the background; then: hobbs attach work
  hobbs run --workspace ~/src --name work
  hobbs run -- claude -p "summarise my open playbooks"
  hobbs run -- sh -c 'hobbs memory list'     # scripting and tests
  hobbs run --base my-runtime:1 -- true`,
		Args: usageArgs(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			o := runOptions{workspace: workspace, image: image, base: base, name: name, binary: binary,
				command: args, detached: detachedChild}
			o.readyFile = readyFile
			if detach {
				return a.detachRun(cmd.Context(), o)
			}
			var code int
			var err error
			if !detachedChild && a.stdinIsTTY() && stdoutIsTTY(a) {
				code, err = a.runOnTerminal(cmd.Context(), o)
			} else {
				code, err = a.runSession(cmd.Context(), o)
			}
			if err != nil {
				return err
			}
			if code != 0 {
				return exitStatus(code)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&workspace, "workspace", "", "host directory mounted at ~/hobbs/workspace (default workspace from config.yaml)")
	cmd.Flags().StringVar(&image, "image", "", "image to run (default image from config.yaml, else the image hobbs version prints)")
	cmd.Flags().StringVar(&base, "base", "", "runtime base image to build on (default base_image from config.yaml)")
	cmd.Flags().StringVar(&name, "name", "", "session name (default hobbs-<random>)")
	cmd.Flags().BoolVarP(&detach, "detach", "d", false, "start the session in the background and print its name (hobbs attach, exec, logs, stop)")
	cmd.Flags().BoolVar(&detachedChild, "detached-child", false, "internal: the background launcher of --detach")
	_ = cmd.Flags().MarkHidden("detached-child")
	cmd.Flags().StringVar(&readyFile, "ready-file", "", "internal: with --detached-child, leave the agent's start to the terminal's hobbs run")
	_ = cmd.Flags().MarkHidden("ready-file")
	cmd.Flags().StringVar(&binary, "binary", "", "static linux hobbs binary for the image (default: this one, or $HOBBS_BINARY)")
	return cmd
}

// runOptions are what a session starts with: hobbs run's flags, or a
// headless playbook run's settings.
type runOptions struct {
	workspace, image, base, name, binary string
	command                              []string
	// A headless run: no terminal, stdin empty, stdout to its own writer.
	headless bool
	stdout   io.Writer
	// policy, when set, is the one policy the run's proxy enforces.
	policy []byte
	// secrets, when not nil, are the only config.yaml variables (env: or
	// secrets:) the session gets.
	secrets []string
	// timeout, when set, stops the session at that wall-clock limit: exit
	// 124 (errs.Timeout).
	timeout time.Duration
	// detached: this is the background launcher of hobbs run --detach,
	// or (readyFile set) of hobbs run on a terminal, which starts the
	// agent itself once readyFile exists.
	detached  bool
	readyFile string
}

// runSession starts a session and runs it to its end: the agent command's
// exit code, or an error.
func (a *app) runSession(ctx context.Context, o runOptions) (int, error) {
	if o.name == "" {
		o.name = launcher.NewName()
	}
	if err := launcher.ValidName(o.name); err != nil {
		return 0, err
	}
	in, err := a.instance()
	if err != nil {
		return 0, err
	}
	e, cfg, err := a.engine(in) // the defaults when there is no instance yet
	if err != nil {
		return 0, err
	}
	uid, gid := os.Getuid(), os.Getgid()
	if err := refuseRoot(); err != nil {
		return 0, err
	}
	if !in.Exists() {
		// On a terminal the first run asks the foundation questions,
		// as hobbs init does.
		res, err := instance.Init(in, instance.InitOptions{Templates: hobbs.Templates, Foundation: a.foundationInterview(false)})
		if err != nil {
			return 0, err
		}
		_ = a.audit(in).Log(audit.Entry{Event: "init", Subject: in.Root, Outcome: "ok", Detail: map[string]any{"created": res.Created, "by": "run"}})
		a.status("created instance %s", in.Root)
		if cfg, err = a.config(in); err != nil {
			return 0, err
		}
	}
	if o.workspace == "" {
		o.workspace = cfg.Workspace
	}
	ws, err := config.ExpandHome(o.workspace)
	if err != nil {
		return 0, errs.Wrap(errs.Usage, err, "workspace %q", o.workspace)
	}
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return 0, errs.Wrap(errs.Failure, err, "create workspace")
	}
	if o.image == "" {
		o.image = cfg.Image
	}
	if o.base == "" {
		o.base = cfg.BaseImage
	}
	if o.binary == "" {
		o.binary = os.Getenv(launcher.EnvBinary)
	}
	if o.secrets != nil {
		if err := onlySecrets(cfg, o.secrets); err != nil {
			return 0, err
		}
	}
	names := make([]string, 0, len(cfg.VaultEnv()))
	for _, kv := range cfg.VaultEnv() {
		names = append(names, kv[0])
	}
	if err := launcher.CheckSecretNames(withValues(append(names, cfg.BindingNames()...))); err != nil {
		return 0, err
	}
	log := a.audit(in)
	started := false
	secrets, err := vault.SessionEnv(in, cfg.VaultEnv())
	if err != nil {
		return 0, err
	}
	bindings, err := sessionBindings(in, cfg)
	if err != nil {
		return 0, err
	}
	s := &launcher.Session{
		Engine: e, Instance: in, Config: cfg, Name: o.name, Workspace: ws,
		Image: launcher.ImageRef(o.image), Secrets: secrets, Bindings: bindings,
		Command: o.command, UID: uid, GID: gid, TTY: a.stdinIsTTY() && stdoutIsTTY(a),
		Stdin: a.in, Stdout: a.out, Stderr: a.errOut,
		Progress:    func(f string, args ...any) { a.status(f, args...) },
		ProxyPolicy: o.policy,
	}
	if o.headless {
		s.TTY, s.Stdin = false, strings.NewReader("")
	}
	if o.detached {
		s.TTY, s.Detached, s.Stdin, s.ReadyFile = true, true, nil, o.readyFile
	}
	if o.stdout != nil {
		s.Stdout = o.stdout
	}
	// The image is checked (built or pulled when it must be) while
	// the session's objects are being created.
	s.Prepare = func(ctx context.Context) (bool, error) {
		engine.Tracef("run: ensure image")
		img, err := launcher.Ensure(ctx, o.image, launcher.BuildOptions{Engine: e, Assets: hobbs.Assets, Base: o.base, Binary: o.binary, Progress: a.errOut})
		if err != nil {
			return false, err
		}
		if img.Image != s.Image {
			return false, errs.Failf("internal: the image is %s, not %s", img.Image, s.Image)
		}
		engine.Tracef("run: image ready")
		started = true
		_ = log.Log(audit.Entry{Event: "session.start", Subject: o.name, Outcome: "ok",
			Detail: map[string]any{"image": img.Image, "workspace": ws, "built": img.Built, "env": names, "secrets": cfg.BindingNames()}})
		a.status("session %s: %s in %s", o.name, img.Image, ws)
		return img.Built || img.Pulled, nil
	}
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	code, err := s.Run(ctx)
	if o.timeout > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		code, err = errs.Timeout, &errs.Error{Code: errs.Timeout, Msg: fmt.Sprintf("session %s stopped at its time limit (%v)", o.name, o.timeout)}
	}
	engine.Tracef("run: session returned")
	if started {
		out := outcome(err)
		if errs.Code(err) == launcher.ExitStopped {
			out, code = "stopped", launcher.ExitStopped
		}
		_ = log.Log(audit.Entry{Event: "session.end", Subject: o.name, Outcome: out, Detail: map[string]any{"exit": code}})
	}
	return code, err
}

// backgroundLauncher is the session's launcher started in the background
// (this hobbs, run --detached-child, in a process session of its own, its
// output in launcher.SessionLog): what hobbs run --detach and hobbs run on
// a terminal both use.
type backgroundLauncher struct {
	name, logPath string
	cmd           *exec.Cmd
	ended         chan error
	e             engine.CLI
}

func (a *app) startBackgroundLauncher(o runOptions, extra ...string) (*backgroundLauncher, error) {
	if o.name == "" {
		o.name = launcher.NewName()
	}
	if err := launcher.ValidName(o.name); err != nil {
		return nil, err
	}
	if err := refuseRoot(); err != nil {
		return nil, err
	}
	in, err := a.instance()
	if err != nil {
		return nil, err
	}
	e, _, err := a.engine(in)
	if err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "find hobbs")
	}
	logPath := launcher.SessionLog(in, o.name)
	if err := os.MkdirAll(filepath.Dir(logPath), 0o700); err != nil {
		return nil, errs.Wrap(errs.Failure, err, "session log")
	}
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "session log")
	}
	defer f.Close()
	args := append([]string{"run", "--detached-child", "--name", o.name}, extra...)
	for flag, v := range map[string]string{"--workspace": o.workspace, "--image": o.image, "--base": o.base, "--binary": o.binary} {
		if v != "" {
			args = append(args, flag, v)
		}
	}
	if len(o.command) > 0 {
		args = append(append(args, "--"), o.command...)
	}
	c := exec.Command(exe, args...)
	c.Env = append(os.Environ(), "HOBBS_HOME="+in.Root)
	c.Stdout, c.Stderr = f, f
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := c.Start(); err != nil {
		return nil, errs.Wrap(errs.Failure, err, "start the session's launcher")
	}
	b := &backgroundLauncher{name: o.name, logPath: logPath, cmd: c, ended: make(chan error, 1), e: e}
	go func() { b.ended <- c.Wait() }()
	return b, nil
}

// procExitCode is a process's exit code from its Wait error.
func procExitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return 1
	}
	return 0
}

// running reports whether the session's agent container runs.
func (b *backgroundLauncher) running(ctx context.Context) bool {
	out, err := b.e.Output(ctx, "inspect", "--format", "{{.State.Running}}", b.name)
	return err == nil && strings.TrimSpace(out) == "true"
}

// logFollower copies what the launcher writes to its log to w.
type logFollower struct {
	path string
	off  int64
	w    io.Writer
}

func (l *logFollower) copy() {
	f, err := os.Open(l.path)
	if err != nil {
		return
	}
	defer f.Close()
	if _, err := f.Seek(l.off, io.SeekStart); err != nil {
		return
	}
	n, _ := io.Copy(l.w, f)
	l.off += n
}

// detachRun starts the session's launcher in the background and returns
// once the agent runs, printing the session's name; if the launcher ends
// first, its output says why.
func (a *app) detachRun(ctx context.Context, o runOptions) error {
	b, err := a.startBackgroundLauncher(o)
	if err != nil {
		return err
	}
	a.status("starting session %s in the background (output: %s)", b.name, b.logPath)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-b.ended:
			out, _ := os.ReadFile(b.logPath)
			fmt.Fprint(a.errOut, lastLines(string(out), 20))
			return &errs.Error{Code: procExitCode(err), Msg: fmt.Sprintf("session %s ended before it was up", b.name)}
		case <-ctx.Done():
			_ = b.cmd.Process.Signal(syscall.SIGTERM)
			return ctx.Err()
		case <-tick.C:
			if b.running(ctx) {
				fmt.Fprintln(a.out, b.name)
				a.status("session %s runs: hobbs attach %s (Ctrl-P Ctrl-Q leaves it), hobbs exec %s -- CMD, hobbs logs %s, hobbs stop %s",
					b.name, b.name, b.name, b.name, b.name)
				return b.cmd.Process.Release()
			}
		}
	}
}

// runOnTerminal is hobbs run on a terminal: the session's launcher runs in
// the background (its output shown here while the session starts), and
// this process starts the agent attached to the terminal. When the agent
// ends, the launcher's cleanup is waited for and the agent's exit code
// returned; when the terminal detaches (Ctrl-P Ctrl-Q), the session goes
// on and this returns at once.
func (a *app) runOnTerminal(ctx context.Context, o runOptions) (int, error) {
	if o.name == "" {
		o.name = launcher.NewName()
	}
	in, err := a.instance()
	if err != nil {
		return 0, err
	}
	ready := launcher.SessionLog(in, o.name) + ".ready"
	_ = os.Remove(ready)
	b, err := a.startBackgroundLauncher(o, "--ready-file", ready)
	if err != nil {
		return 0, err
	}
	defer os.Remove(ready)
	follow := &logFollower{path: b.logPath, w: a.errOut}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for up := false; !up; {
		select {
		case err := <-b.ended:
			follow.copy()
			return procExitCode(err), &errs.Error{Code: procExitCode(err), Msg: fmt.Sprintf("session %s ended before it was up", b.name)}
		case <-ctx.Done():
			_ = b.cmd.Process.Signal(syscall.SIGTERM)
			<-b.ended
			follow.copy()
			return errs.Interrupted, &errs.Error{Code: errs.Interrupted, Msg: "interrupted"}
		case <-tick.C:
			follow.copy()
			_, err := os.Stat(ready)
			up = err == nil
		}
	}
	c, err := b.e.Command(context.WithoutCancel(ctx), nil, "start", "--attach", "--interactive", b.name)
	if err != nil {
		return 0, err
	}
	c.Stdin, c.Stdout, c.Stderr = a.in, a.out, a.errOut
	started := make(chan error, 1)
	go func() { started <- c.Run() }()
	var startErr error
	select {
	case startErr = <-started:
	case <-ctx.Done(): // SIGTERM: the launcher stops the agent
		_ = b.cmd.Process.Signal(syscall.SIGTERM)
		startErr = <-started
	}
	code := procExitCode(startErr)
	if ctx.Err() == nil && b.running(context.Background()) {
		fmt.Fprintf(a.errOut, "\nhobbs: detached from session %s, which goes on: hobbs attach %s, hobbs logs %s, hobbs stop %s\n",
			b.name, b.name, b.name, b.name)
		return 0, b.cmd.Process.Release()
	}
	lerr := <-b.ended // its cleanup
	follow.copy()
	// The launcher's own end (a stop, a failed proxy) is in its output,
	// shown above, and its code is the session's.
	if lc := procExitCode(lerr); lc != 0 {
		return lc, nil
	}
	return code, nil
}

// refuseRoot refuses to start a session as root: the agent writes the
// instance and the workspace with the launcher's uid, so as root every file
// it makes on the host would be root's, and a container escape would start
// as root.
func refuseRoot() error {
	if os.Getuid() != 0 {
		return nil
	}
	return errs.Usagef("hobbs run will not run the agent as root").
		WithHint("run hobbs as an ordinary user allowed to use the engine, e.g.: useradd -m -G docker hobbs; " +
			"then, as that user (su - hobbs): hobbs init && hobbs run (docs/setup.md, \"Running as root\")")
}

// onlySecrets narrows cfg to the variables names (env: or secrets:); a name
// config.yaml gives no secret is an error.
func onlySecrets(cfg *config.Config, names []string) error {
	keep := map[string]bool{}
	for _, n := range names {
		_, env := cfg.Env[n]
		_, bound := cfg.Secrets[n]
		if !env && !bound {
			return errs.Usagef("the run needs the secret %s, which config.yaml neither binds (secrets:) nor maps (env:)", n).
				WithHint("add it to config.yaml, or remove it from the playbook's run.secrets")
		}
		keep[n] = true
	}
	for n := range cfg.Env {
		if !keep[n] {
			delete(cfg.Env, n)
		}
	}
	for n := range cfg.Secrets {
		if !keep[n] {
			delete(cfg.Secrets, n)
		}
	}
	return nil
}

// withValues turns variable names into NAME= entries (for checking names
// before any value is decrypted).
func withValues(names []string) []string {
	kv := make([]string, len(names))
	for i, n := range names {
		kv[i] = n + "="
	}
	return kv
}

func stdoutIsTTY(a *app) bool {
	f, ok := a.out.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// sessionBindings decrypts the secrets config.yaml binds to hosts, after
// checking the hosts: the proxy puts them in requests to those hosts only.
func sessionBindings(in instance.Instance, cfg *config.Config) ([]launcher.Binding, error) {
	names := cfg.BindingNames()
	if len(names) == 0 {
		return nil, nil
	}
	mapping := make([][2]string, 0, len(names))
	for _, n := range names {
		if _, err := egress.ParseSecretHosts(cfg.Secrets[n].Hosts); err != nil {
			return nil, errs.Usagef("config.yaml: secrets.%s.%v", n, err).
				WithHint("hosts take the forms of policy.yaml domains: api.github.com, *.example.com, host:8443")
		}
		mapping = append(mapping, [2]string{n, cfg.Secrets[n].Vault})
	}
	env, err := vault.SessionEnv(in, mapping)
	if err != nil {
		return nil, err
	}
	out := make([]launcher.Binding, 0, len(env))
	for i, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		out = append(out, launcher.Binding{Name: name, Value: value, Hosts: cfg.Secrets[names[i]].Hosts})
	}
	return out, nil
}
