package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/hobbs-agent/hobbs"
	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/engine"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/launcher"
)

// exitStatus is returned by commands whose exit code is another process's
// (hobbs run): Main exits with it and prints nothing.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func newRunCmd(a *app) *cobra.Command {
	var workspace, image, base, name, binary string
	var detach, detachedChild, plan bool
	var readyFile string
	var out *output
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
hobbs stop NAME.

--plan prints the session's plan instead of starting it: both containers
(user, capabilities, network, limits, every mount), the egress policy the
proxy will enforce, the secrets the agent gets (by name: env: values, and
placeholders for those bound to hosts) and its command; --json prints it
whole. A plan never holds a secret's value or the proxy's token.`,
		Example: `  hobbs run                                  # claude in ~/hobbs-workspace
  hobbs run --plan                           # what a session would be allowed; start nothing
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
			if plan {
				return a.printPlan(o, out)
			}
			if out.json {
				return errs.Usagef("--json goes with --plan")
			}
			if detach {
				return a.detachRun(cmd.Context(), o)
			}
			var code int
			var err error
			if !detachedChild && a.onTerminal() {
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
	cmd.Flags().BoolVar(&plan, "plan", false, "print what the session would be allowed (containers, mounts, egress policy, secrets by name, command); start nothing")
	out = a.jsonFlag(cmd, "with --plan: print the whole plan as JSON")
	return cmd
}

// runOptions are hobbs run's flags.
type runOptions struct {
	workspace, image, base, name, binary string
	command                              []string
	// detached: this is the background launcher of hobbs run --detach,
	// or (readyFile set) of hobbs run on a terminal, which starts the
	// agent itself once readyFile exists.
	detached  bool
	readyFile string
}

// spec is the run's spec and plan: flags and config.yaml's defaults, the
// host surveyed. A missing instance is made first (as hobbs init does),
// unless only the plan is wanted.
func (a *app) planRun(o runOptions, kind launcher.Kind, planOnly bool) (*launcher.Plan, instance.Instance, engine.CLI, error) {
	fail := func(err error) (*launcher.Plan, instance.Instance, engine.CLI, error) {
		return nil, instance.Instance{}, engine.CLI{}, err
	}
	if o.name != "" {
		if err := launcher.ValidName(o.name); err != nil {
			return fail(err)
		}
	}
	in, err := a.instance()
	if err != nil {
		return fail(err)
	}
	e, cfg, err := a.engine(in) // the defaults when there is no instance yet
	if err != nil && (!planOnly || cfg == nil) {
		return fail(err)
	}
	if err := launcher.RefuseRoot(); err != nil && !planOnly {
		return fail(err)
	} else if err != nil {
		a.warn("as root, hobbs run refuses to start this run; the plan shows it as uid 0 would get it")
	}
	if !in.Exists() {
		if planOnly {
			return fail(errs.Missingf("no instance at %s", in.Root).WithHint("hobbs init creates it (hobbs run does too, on first use)"))
		}
		// On a terminal the first run asks the foundation questions,
		// as hobbs init does.
		res, err := instance.Init(in, instance.InitOptions{Templates: hobbs.Templates, Foundation: a.foundationInterview(false)})
		if err != nil {
			return fail(err)
		}
		_ = a.audit(in).Log(audit.Entry{Event: "init", Subject: in.Root, Outcome: "ok", Detail: map[string]any{"created": res.Created, "by": "run"}})
		a.status("created instance %s", in.Root)
		if cfg, err = a.config(in); err != nil {
			return fail(err)
		}
	}
	if o.image == "" {
		o.image = cfg.Image
	}
	// As the proxy will read it: an invalid policy says so, with file:line.
	if err := launcher.CheckPolicy(in); err != nil {
		return fail(err)
	}
	pol, err := effectivePolicy(in)
	if err != nil {
		return fail(err)
	}
	spec := launcher.RunSpec{Kind: kind, Name: o.name, Image: launcher.ImageRef(o.image), Command: o.command,
		TTY: o.detached || a.onTerminal(), Policy: pol}
	p, err := launcher.PlanRun(in, cfg, e.IsPodman(), o.workspace, spec, a.status)
	return p, in, e, err
}

// printPlan prints the plan of the run o describes: a summary, or with
// --json the whole plan.
func (a *app) printPlan(o runOptions, out *output) error {
	p, _, _, err := a.planRun(o, launcher.KindSession, true)
	if err != nil {
		return err
	}
	return out.print(p, p.WriteSummary)
}

// runSession plans a session and carries the plan out: the agent command's
// exit code, or an error.
func (a *app) runSession(ctx context.Context, o runOptions) (int, error) {
	p, in, e, err := a.planRun(o, launcher.KindSession, false)
	if err != nil {
		return 0, err
	}
	return launcher.Execute(ctx, p, a.runtime(in, e, o))
}

// runtime is what Execute needs of this process: the engine, the
// terminal's streams, the audit log and how to make the image current.
func (a *app) runtime(in instance.Instance, e engine.CLI, o runOptions) launcher.Runtime {
	cfg, err := a.config(in)
	if err != nil {
		cfg = config.Default()
	}
	b := launcher.BuildOptions{Engine: e, Assets: hobbs.Assets, Base: o.base, Binary: o.binary, Progress: a.errOut}
	b.Defaults(cfg, true) // the base and the binary; the image is the plan's
	return launcher.Runtime{Engine: e, Stdin: a.in, Stdout: a.out, Stderr: a.errOut, Audit: a.audit(in), Build: &b,
		Progress: a.status, Detached: o.detached, ReadyFile: o.readyFile}
}

// startBackground starts the session's launcher in the background: this
// hobbs, run --detached-child with o's flags.
func (a *app) startBackground(o runOptions, extra ...string) (*launcher.Background, instance.Instance, error) {
	if o.name == "" {
		o.name = launcher.NewName()
	}
	if err := launcher.ValidName(o.name); err != nil {
		return nil, instance.Instance{}, err
	}
	if err := launcher.RefuseRoot(); err != nil {
		return nil, instance.Instance{}, err
	}
	in, err := a.instance()
	if err != nil {
		return nil, in, err
	}
	e, _, err := a.engine(in)
	if err != nil {
		return nil, in, err
	}
	args := extra
	for _, f := range [][2]string{{"--workspace", o.workspace}, {"--image", o.image}, {"--base", o.base}, {"--binary", o.binary}} {
		if f[1] != "" {
			args = append(args, f[0], f[1])
		}
	}
	if len(o.command) > 0 {
		args = append(append(args, "--"), o.command...)
	}
	b, err := launcher.StartBackground(e, in, o.name, args)
	return b, in, err
}

func (a *app) terminal() launcher.Terminal {
	return launcher.Terminal{In: a.in, Out: a.out, ErrOut: a.errOut, Status: a.status}
}

// detachRun is hobbs run --detach.
func (a *app) detachRun(ctx context.Context, o runOptions) error {
	b, _, err := a.startBackground(o)
	if err != nil {
		return err
	}
	return b.Detach(ctx, a.terminal())
}

// runOnTerminal is hobbs run on a terminal: the launcher in the background,
// the agent attached here (launcher.Background.Attach).
func (a *app) runOnTerminal(ctx context.Context, o runOptions) (int, error) {
	if o.name == "" {
		o.name = launcher.NewName()
	}
	in, err := a.instance()
	if err != nil {
		return 0, err
	}
	ready := launcher.ReadyFile(in, o.name)
	_ = os.Remove(ready)
	b, _, err := a.startBackground(o, "--ready-file", ready)
	if err != nil {
		return 0, err
	}
	return b.Attach(ctx, ready, a.terminal())
}
