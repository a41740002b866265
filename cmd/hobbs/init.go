package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hobbs-agent/hobbs"
	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/instance"
)

func newInitCmd(a *app) *cobra.Command {
	var git, noInput bool
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Create or complete your Hobbs instance directory",
		Long: `Create the instance directory with its layout and seed files.

init is idempotent: it creates only what is missing and never changes a file
that exists, so it is safe to run again after an upgrade. On a terminal it
asks a few questions to co-create foundation.md (your core values, principles
and long-term goals); --no-input skips them and leaves the template.`,
		Example: `  hobbs init
  hobbs init --git                       # also make it a git repository
  HOBBS_HOME=~/hobbs-test hobbs init --no-input`,
		Args: usageArgs(cobra.NoArgs),
	}
	cmd.Flags().BoolVar(&git, "git", false, "make the instance a git repository (keys and logs ignored)")
	cmd.Flags().BoolVar(&noInput, "no-input", false, "do not ask questions; keep the templates as they are")
	out := a.jsonFlag(cmd, "print what was created and kept as JSON")
	cmd.RunE = a.withInstance(func(cmd *cobra.Command, args []string, in instance.Instance) error {
		opt := instance.InitOptions{Templates: hobbs.Templates, Git: git}
		if !noInput && a.stdinIsTTY() {
			opt.Foundation = func(tpl []byte) ([]byte, error) {
				return instance.CoCreateFoundation(tpl, a.in, a.errOut)
			}
		}
		res, err := instance.Init(in, opt)
		if res != nil {
			a.logAudit(in, audit.Entry{Event: "init", Subject: in.Root, Outcome: outcome(err),
				Detail: map[string]any{"created": res.Created}})
		}
		if err != nil {
			return err
		}
		return out.print(res, func(w io.Writer) error {
			for _, p := range res.Created {
				a.status("created  %s", p)
			}
			if len(res.Created) == 0 {
				a.status("%s: already complete, nothing changed (%d paths kept)", in.Root, len(res.Kept))
			} else if len(res.Kept) > 0 {
				a.status("kept     %s", strings.Join(res.Kept, ", "))
			}
			if res.Git != "" {
				a.status("git: %s", res.Git)
			}
			fmt.Fprintln(w, in.Root)
			return nil
		})
	})
	return cmd
}
