package main

import (
	"errors"
	"io/fs"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"
)

func init() { register(newConfigCmd) }

func newConfigCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show and validate the instance configuration",
		Long: `config.yaml holds the instance settings; templates/config.yaml (copied at
init) documents every key. Unknown keys and wrong types are errors.`,
		Example: "  hobbs config show\n  hobbs config validate",
	}
	var asJSON bool
	show := &cobra.Command{
		Use:     "show",
		Short:   "Print the effective configuration (file, defaults and environment)",
		Example: "  hobbs config show\n  hobbs config show --json | jq .resources",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			in, err := a.instance()
			if err != nil {
				return err
			}
			c, err := a.config(in)
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(c)
			}
			enc := yaml.NewEncoder(a.out)
			enc.SetIndent(2)
			return enc.Encode(c)
		},
	}
	show.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	validate := &cobra.Command{
		Use:     "validate",
		Short:   "Check config.yaml; report every problem with its line (exit 2 if invalid)",
		Example: "  hobbs config validate",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			in, err := a.instance()
			if err != nil {
				return err
			}
			if _, err := a.config(in); err != nil {
				return err
			}
			if _, err := in.FS().Lstat(in.Config()); errors.Is(err, fs.ErrNotExist) {
				a.status("%s: no such file; the defaults apply", in.Config())
				return nil
			}
			a.status("%s: valid", in.Config())
			return nil
		},
	}
	cmd.AddCommand(show, validate)
	return cmd
}
