package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/hobbs-agent/hobbs"
	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/launcher"
	"github.com/hobbs-agent/hobbs/src/plan"
	"github.com/hobbs-agent/hobbs/src/runner"
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
			o := runner.SessionOptions{Workspace: workspace, Image: image, Base: base, Name: name, Binary: binary,
				Command: args, Detached: detachedChild, ReadyFile: readyFile}
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

// planRun is the session's plan: flags and config.yaml's defaults, the
// host surveyed (runner.Runner.PlanSession). A missing instance is made
// first (as hobbs init does), unless only the plan is wanted.
func (a *app) planRun(o runner.SessionOptions, planOnly bool) (*plan.Plan, runner.Runner, error) {
	in, err := a.instance()
	if err == nil {
		err = o.CheckName()
	}
	if err != nil {
		return nil, runner.Runner{}, err
	}
	r, err := a.headlessRunner(in) // the defaults when there is no instance yet
	if err != nil && (!planOnly || r.Config == nil) {
		return nil, r, err
	}
	if err := launcher.RefuseRoot(); err != nil && !planOnly {
		return nil, r, err
	} else if err != nil {
		a.warn("as root, hobbs run refuses to start this run; the plan shows it as uid 0 would get it")
	}
	if !in.Exists() {
		if planOnly {
			return nil, r, withHint(errs.Missingf("no instance at %s", in.Root), "%s creates it (hobbs run does too, on first use)", initCommand(in))
		}
		if err := a.initForRun(in); err != nil {
			return nil, r, err
		}
		if r.Config, err = a.config(in); err != nil {
			return nil, r, err
		}
	}
	o.TTY = o.Detached || a.onTerminal()
	p, err := r.PlanSession(o)
	return p, r, err
}

// initForRun creates the instance of a first hobbs run, as hobbs init
// does: on a terminal it asks the foundation questions. hobbs run on a
// terminal and --detach call it before their launcher starts in the
// background, where there is no terminal to ask on.
func (a *app) initForRun(in instance.Instance) error {
	res, err := instance.Init(in, instance.InitOptions{Templates: hobbs.Templates, Foundation: a.foundationInterview(false)})
	if err != nil {
		return err
	}
	_ = a.audit(in).Log(audit.Entry{Event: "init", Subject: in.Root, Outcome: "ok", Detail: map[string]any{"created": res.Created, "by": "run"}})
	a.status("created instance %s", in.Root)
	return nil
}

// printPlan prints the plan of the run o describes: a summary, or with
// --json the whole plan.
func (a *app) printPlan(o runner.SessionOptions, out *output) error {
	p, _, err := a.planRun(o, true)
	if err != nil {
		return err
	}
	return out.print(p, p.WriteSummary)
}

// runSession plans a session and carries the plan out: the agent command's
// exit code, or an error.
func (a *app) runSession(ctx context.Context, o runner.SessionOptions) (int, error) {
	p, r, err := a.planRun(o, false)
	if err != nil {
		return 0, err
	}
	o.Stdin = a.in
	return launcher.Execute(ctx, p, r.Runtime(o))
}

// startBackground starts the session's launcher in the background: this
// hobbs, run --detached-child with o's flags.
func (a *app) startBackground(o runner.SessionOptions, extra ...string) (*launcher.Background, instance.Instance, error) {
	if o.Name == "" {
		o.Name = launcher.NewName()
	}
	if err := plan.ValidName(o.Name); err != nil {
		return nil, instance.Instance{}, err
	}
	if err := launcher.RefuseRoot(); err != nil {
		return nil, instance.Instance{}, err
	}
	in, err := a.instance()
	if err != nil {
		return nil, in, err
	}
	if !in.Exists() {
		if err := a.initForRun(in); err != nil {
			return nil, in, err
		}
	}
	e, _, err := a.engine(in)
	if err != nil {
		return nil, in, err
	}
	b, err := launcher.StartBackground(e, in, o.Name, append(extra, o.Args()...))
	return b, in, err
}

func (a *app) terminal() launcher.Terminal {
	return launcher.Terminal{In: a.in, Out: a.out, ErrOut: a.errOut, Status: a.status, Words: adviceText}
}

// detachRun is hobbs run --detach.
func (a *app) detachRun(ctx context.Context, o runner.SessionOptions) error {
	b, _, err := a.startBackground(o)
	if err != nil {
		return err
	}
	return launcherEnded(b.Detach(ctx, a.terminal()))
}

// launcherEnded is err, for a background launcher that ended before its
// session was up (launcher.EndedEarly): its own error and hint, shown
// above, say why and what to do, so this one only exits with its code;
// a launcher that said nothing (killed) gets the line that it ended.
func launcherEnded(err error) error {
	var e *launcher.EndedEarly
	if !errors.As(err, &e) {
		return err
	}
	code := e.Code
	if code == 0 {
		code = errs.Failure
	}
	if e.Said {
		return exitStatus(code)
	}
	return &errs.Error{Code: code, Msg: e.Error()}
}

// runOnTerminal is hobbs run on a terminal: the launcher in the background,
// the agent attached here (launcher.Background.Attach).
func (a *app) runOnTerminal(ctx context.Context, o runner.SessionOptions) (int, error) {
	if o.Name == "" {
		o.Name = launcher.NewName()
	}
	in, err := a.instance()
	if err != nil {
		return 0, err
	}
	ready := launcher.ReadyFile(in, o.Name)
	_ = os.Remove(ready)
	b, _, err := a.startBackground(o, "--ready-file", ready)
	if err != nil {
		return 0, err
	}
	code, err := b.Attach(ctx, ready, a.terminal())
	return code, launcherEnded(err)
}
