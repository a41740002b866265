package main

import (
	"fmt"
	"io/fs"

	"github.com/spf13/cobra"

	"github.com/hobbs-agent/hobbs"
	"github.com/hobbs-agent/hobbs/src/approval"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/playbook"
	"github.com/hobbs-agent/hobbs/src/schedule"
	"github.com/hobbs-agent/hobbs/src/serve"
)

func newServeCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run playbooks for signed webhooks and deliver their results",
		Long: `The host service (docs/serve.md): POST /hooks/NAME for each trigger in
config.yaml, GET /healthz, at serve.listen (127.0.0.1:8421). A signed
delivery of a listed event whose id and body the trigger has not seen in
24 h (a replay under a new id is refused too) queues a run of the trigger's
playbook (202 with the job id; the event is untrusted data in $HOBBS_EVENT),
within the queue's limits (beyond: 429 or 503 at once; docs/serve.md, Limits);
serve.max_runs at once; each end goes to the owner's channels, or stderr.
As you (never root), in the foreground, logs on stderr; SIGTERM drains.`,
		Example: `  hobbs vault set webhook-github        # the webhook's shared secret
  hobbs playbook approve triage-issue     # what its runs may do
  hobbs serve                             # then: curl http://127.0.0.1:8421/healthz
  hobbs serve install`,
		Args: usageArgs(cobra.NoArgs),
	}
	cmd.RunE = a.withPlaybooks(func(cmd *cobra.Command, _ []string, in instance.Instance, st *playbook.Store) error {
		r, err := a.headlessRunner(in)
		if err != nil {
			return err
		}
		r.Stdout = a.errOut // a run's output goes to the log
		ap := approval.OpenOwner(in, a.policyFile(in), st, a.audit(in))
		return serve.Serve(a.ctx, serve.Options{Launcher: r, Playbooks: st, Approvals: &ap, Log: a.errOut})
	})
	pair := &cobra.Command{Use: "pair telegram", Short: "Print a one-time code that makes your Telegram chat the owner's",
		Example: "  hobbs serve pair telegram    # then send /start CODE to your bot, in a private chat",
		Args:    usageArgs(cobra.ExactArgs(1)), ValidArgs: []string{"telegram"}}
	pair.RunE = a.withExistingInstance(func(_ *cobra.Command, args []string, in instance.Instance) error {
		p, err := serve.Pair(in, args[0], a.audit(in))
		if err == nil {
			fmt.Fprintln(a.out, p.Code)
			a.status("send /start %s to your bot in a private chat before %s (one use)", p.Code, p.Expires.Local().Format("15:04"))
		}
		return err
	})
	cmd.AddCommand(newServeInstallCmd(a), pair, newServeStatusCmd(a))
	return cmd
}

func newServeInstallCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "install",
		Short: "Write and enable hobbs serve's systemd user unit",
		Long: `Write ~/.config/systemd/user/hobbs-serve.service (dist/hobbs-serve.service:
this hobbs, this instance), then systemctl --user enable --now it; without a
systemd user manager, write nothing and say what to do.`,
		Example: `  hobbs serve install
  systemctl --user status hobbs-serve`,
		Args: usageArgs(cobra.NoArgs),
	}
	cmd.RunE = a.withExistingInstance(func(cmd *cobra.Command, _ []string, in instance.Instance) error {
		tpl, _ := fs.ReadFile(hobbs.Dist, "hobbs-serve.service")
		res, err := serve.Install(serve.InstallOptions{Template: tpl, Instance: in.Root,
			Schedule: schedule.OptionsFromEnv(nil), Audit: a.audit(in)})
		if err != nil {
			return err
		}
		a.status("hobbs serve: %s enabled and started (journalctl --user -u hobbs-serve)", res.Unit)
		return nil
	})
	return cmd
}
