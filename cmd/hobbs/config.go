package main

import (
	"cmp"
	"errors"
	"io"
	"io/fs"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/hobbs-agent/hobbs"
	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/instance"
)

func newConfigCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show and validate the instance configuration",
		Long: `config.yaml holds the instance settings, each documented in its comments
(hobbs init writes it); hobbs config keys lists them. Unknown keys and wrong
types are errors.`,
		Example: "  hobbs config show\n  hobbs config validate\n  hobbs config keys",
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
	keys := &cobra.Command{
		Use:     "keys",
		Short:   "List every key config.yaml takes, with its default and what it does",
		Example: "  hobbs config keys\n  hobbs config keys --json | jq -r '.[].key'",
		Args:    usageArgs(cobra.NoArgs),
	}
	keysOut := a.jsonFlag(keys, "print the keys, defaults and their whole comments as JSON")
	keys.RunE = func(cmd *cobra.Command, args []string) error {
		tpl, err := fs.ReadFile(hobbs.Templates, "config.yaml")
		if err != nil {
			return err
		}
		list, err := config.Keys(tpl)
		if err != nil {
			return err
		}
		return printTable(keysOut, list, "", "KEY\tDEFAULT\tWHAT", func(k config.Key) string { return k.Name + "\t" + cmp.Or(k.Default, `""`) + "\t" + k.Summary() })
	}
	cmd.AddCommand(show, validate, keys)
	return cmd
}
