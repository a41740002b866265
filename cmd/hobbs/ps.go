package main

import (
	"github.com/spf13/cobra"

	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/engine"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/launcher"
)

// engine loads the config of in and finds the container engine CLI it names
// (a Missing error with the fix when it is not installed).
func (a *app) engine(in instance.Instance) (engine.CLI, *config.Config, error) {
	cfg, err := a.config(in)
	if err != nil {
		return engine.CLI{}, nil, err
	}
	e := engine.New(cfg.Engine)
	_, err = e.Path()
	return e, cfg, err
}

// instanceEngine resolves the instance (which need not exist: its config
// is the defaults then) and finds its engine.
func (a *app) instanceEngine() (instance.Instance, engine.CLI, *config.Config, error) {
	in, err := a.instance()
	if err != nil {
		return in, engine.CLI{}, nil, err
	}
	e, cfg, err := a.engine(in)
	return in, e, cfg, err
}

// sessionEngine resolves the instance and its engine, and lists the
// instance's sessions, for the session commands (ps, attach, logs).
func (a *app) sessionEngine() (engine.CLI, []launcher.SessionInfo, error) {
	in, e, _, err := a.instanceEngine()
	if err != nil {
		return e, nil, err
	}
	list, err := launcher.List(a.ctx, e, in)
	return e, list, err
}

// runningSession is the instance's engine, once session name is found
// running there (attach, exec).
func (a *app) runningSession(name string) (engine.CLI, error) {
	e, list, err := a.sessionEngine()
	if err != nil {
		return e, err
	}
	return e, launcher.FindRunning(list, name)
}

func newPsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ps",
		Short: "List the sessions of this instance",
		Long: `List the running (and leftover) sessions of this instance: every container
and network hobbs labelled for it. A session whose hobbs process is gone is
marked orphan; hobbs stop --all (or the next hobbs run) removes it.`,
		Example: "  hobbs ps\n  hobbs ps --json | jq -r '.[].name'",
		Args:    usageArgs(cobra.NoArgs),
	}
	out := a.jsonFlag(cmd, "print sessions as JSON")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		_, list, err := a.sessionEngine()
		if err != nil {
			return err
		}
		return printTable(out, list, "no sessions", launcher.SessionColumns, launcher.SessionInfo.Row)
	}
	return cmd
}
