package main

import (
	"cmp"
	"errors"
	"io"
	"io/fs"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/hobbs-agent/hobbs"
	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/instance"
)

func newConfigCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show, validate, read and change the instance configuration",
		Long: `config.yaml holds the instance settings, each documented in its comments
(hobbs init writes it); hobbs config keys lists them. Unknown keys and wrong
types are errors. hobbs config get KEY prints a setting's effective value,
hobbs config set KEY VALUE changes it in config.yaml.`,
		Example: "  hobbs config show\n  hobbs config validate\n  hobbs config keys\n  hobbs config get resources.memory\n  hobbs config set resources.memory 8g",
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
	cmd.AddCommand(show, validate, keys, newConfigGetCmd(a), newConfigSetCmd(a))
	return cmd
}

func newConfigGetCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "get KEY",
		Short: "Print the effective value of one setting (file, defaults and environment)",
		Long: `Print the value hobbs uses for KEY (dotted: resources.memory), from
config.yaml, else its default, with the environment's overrides (as hobbs
config show): a scalar as it is, a mapping or list in YAML flow style.`,
		Example: "  hobbs config get resources.memory\n  hobbs config get env\n  hobbs config get image --json",
		Args:    usageArgs(cobra.ExactArgs(1)),
	}
	out := a.jsonFlag(cmd, "print the key and its value as JSON")
	cmd.RunE = a.withInstance(func(cmd *cobra.Command, args []string, in instance.Instance) error {
		c, err := a.config(in)
		if err != nil {
			return err
		}
		v, err := c.Get(args[0])
		if err != nil {
			return err
		}
		return out.printLine(map[string]string{"key": args[0], "value": v}, v, nil)
	})
	return cmd
}

func newConfigSetCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "set KEY VALUE",
		Short: "Change one setting in config.yaml (its comments and layout kept)",
		Long: `Set KEY (dotted: resources.memory) to VALUE, a YAML value (8g, 512, true,
"a string", [a, b]), in config.yaml. Only the value's text changes: the
comments, blank lines and the other keys stay as they are; a key the file
does not have is added under its mapping. The file as changed must be valid
(hobbs config validate), or nothing is written (exit 2, the line and the
reason); a config.yaml that does not parse is reported and never rewritten.
The write is atomic, under the config lock. A running session keeps the
settings it started with.`,
		Example: `  hobbs config set resources.memory 8g
  hobbs config set engine podman
  hobbs config set env.GITHUB_TOKEN vault:github-token`,
		Args: usageArgs(cobra.ExactArgs(2)),
	}
	out := a.jsonFlag(cmd, "print the change as JSON")
	cmd.RunE = a.withExistingInstance(func(cmd *cobra.Command, args []string, in instance.Instance) error {
		ch, err := config.Set(in.FS(), in.Config(), in.Lock("config"), args[0], args[1])
		if err != nil {
			return err
		}
		_ = a.audit(in).Log(audit.Entry{Event: "config.set", Subject: ch.Key, Outcome: "ok", Detail: map[string]any{"added": ch.Added}})
		return out.printLine(ch, ch.New, func() {
			if ch.Added {
				a.status("%s: added %s: %s", in.Config(), ch.Key, ch.New)
			} else {
				a.status("%s: %s: %s → %s", in.Config(), ch.Key, orDash(ch.Old), ch.New)
			}
		})
	})
	return cmd
}
