package main

import (
	"errors"
	"io"
	"io/fs"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/hobbs-agent/hobbs/src/instance"
)

func newConfigCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show and validate the instance configuration",
		Long: `config.yaml holds the instance settings; templates/config.yaml (copied at
init) documents every key. Unknown keys and wrong types are errors.`,
		Example: "  hobbs config show\n  hobbs config validate",
	}
	show := &cobra.Command{
		Use:     "show",
		Short:   "Print the effective configuration (file, defaults and environment)",
		Example: "  hobbs config show\n  hobbs config show --json | jq .resources",
		Args:    usageArgs(cobra.NoArgs),
	}
	out := a.jsonFlag(show, "print as JSON")
	show.RunE = a.withInstance(func(cmd *cobra.Command, args []string, in instance.Instance) error {
		c, err := a.config(in)
		if err != nil {
			return err
		}
		return out.print(c, func(w io.Writer) error {
			enc := yaml.NewEncoder(w)
			enc.SetIndent(2)
			return enc.Encode(c)
		})
	})
	validate := &cobra.Command{
		Use:     "validate",
		Short:   "Check config.yaml; report every problem with its line (exit 2 if invalid)",
		Example: "  hobbs config validate",
		Args:    usageArgs(cobra.NoArgs),
		RunE: a.withInstance(func(cmd *cobra.Command, args []string, in instance.Instance) error {
			if _, err := a.config(in); err != nil {
				return err
			}
			if _, err := in.FS().Lstat(in.Config()); errors.Is(err, fs.ErrNotExist) {
				a.status("%s: no such file; the defaults apply", in.Config())
				return nil
			}
			a.status("%s: valid", in.Config())
			return nil
		}),
	}
	cmd.AddCommand(show, validate)
	return cmd
}
