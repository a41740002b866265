// Package clitree holds the conventions of hobbs's command tree that cobra
// does not give (docs/cli.md): a flag parsing error is a usage error (exit
// 2) that names the nearest flag; a command that only groups subcommands
// (the root too) rejects an unknown one with exit 2, one error line and one
// did-you-mean hint, and prints its help when called alone; the completion
// command has examples like every other; errors print as "hobbs: " lines
// and a hint, and map to the exit codes of package errs.
package clitree

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/safefile"
	"github.com/hobbs-agent/hobbs/src/style"
)

// Setup applies the conventions to root, once every command is added.
func Setup(root *cobra.Command) {
	root.SetFlagErrorFunc(flagError)
	addCompletion(root)
	rejectUnknownSubcommands(root)
}

// UsageArgs wraps a cobra positional-args validator so its errors exit 2.
func UsageArgs(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := v(cmd, args); err != nil {
			return &errs.Error{Code: errs.Usage, Msg: err.Error()}
		}
		return nil
	}
}

// ExitCode maps cobra's own usage errors (unknown command, bad arg count)
// to exit 2 and a lock still held by another process to 124, however the
// domain package wrapped it; everything else carries its code in the errs
// chain.
func ExitCode(err error) int {
	if errors.Is(err, safefile.ErrLockTimeout) {
		return errs.Timeout
	}
	var e *errs.Error
	if errors.As(err, &e) {
		return e.Code
	}
	if errs.IsUsageMessage(err.Error()) {
		return errs.Usage
	}
	return errs.Failure
}

// Report prints err, which ran hobbs args, on w: a "hobbs: " line per line
// of it, then its hint (as hint words it); a usage error without one (but
// for a file's, which names its line) gets the command's --help as its hint.
func Report(w io.Writer, root *cobra.Command, args []string, err error, hint func(error) string) {
	for _, line := range strings.Split(err.Error(), "\n") {
		style.Fprint(w, style.Fail, "hobbs:")
		fmt.Fprintf(w, " %s\n", line)
	}
	h := hint(err)
	if h == "" && ExitCode(err) == errs.Usage && !strings.Contains(err.Error(), ".yaml:") {
		h = fmt.Sprintf("see 'hobbs %s --help'", commandPath(root, args))
	}
	if h != "" {
		style.Fprint(w, style.Hint, "hobbs: hint:")
		fmt.Fprintf(w, " %s\n", h)
	}
}

func commandPath(root *cobra.Command, args []string) string {
	c, _, err := root.Find(args)
	if err != nil || c == nil || c == root {
		return "<command>"
	}
	return strings.TrimPrefix(c.CommandPath(), "hobbs ")
}

// flagError makes a flag parsing error a usage error (exit 2) and, for an
// unknown flag, suggests the closest flag c takes (cobra suggests commands,
// not flags).
func flagError(c *cobra.Command, err error) error {
	e := &errs.Error{Code: errs.Usage, Msg: err.Error()}
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return e
	}
	var names []string // c's visible flags, its own and inherited
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	if s := errs.Closest(name, names); s != "" {
		e.WithHint("did you mean --%s? (see '%s --help')", s, c.CommandPath())
	}
	return e
}

// addCompletion adds cobra's completion command when the tree is built, not
// at Execute, so that it follows the same conventions as the others
// (examples, unknown subcommands rejected).
func addCompletion(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	c, _, err := root.Find([]string{"completion"})
	if err != nil || c == root {
		return
	}
	c.Example = "  source <(hobbs completion bash)\n  hobbs completion zsh > \"${fpath[1]}/_hobbs\""
	examples := map[string]string{
		"bash":       "  source <(hobbs completion bash)\n  hobbs completion bash > /etc/bash_completion.d/hobbs",
		"zsh":        "  hobbs completion zsh > \"${fpath[1]}/_hobbs\"",
		"fish":       "  hobbs completion fish > ~/.config/fish/completions/hobbs.fish",
		"powershell": "  hobbs completion powershell | Out-String | Invoke-Expression",
	}
	for _, sub := range c.Commands() {
		if sub.Example == "" {
			sub.Example = examples[sub.Name()]
		}
	}
}

// groupAnnotation marks a command that only holds subcommands (its RunE
// only rejects unknown ones).
const groupAnnotation = "hobbs.group"

// IsGroup reports whether c only holds subcommands.
func IsGroup(c *cobra.Command) bool { return c.Annotations[groupAnnotation] == "true" }

// rejectUnknownSubcommands makes every command group from c down (a command
// that only holds subcommands) fail with exit 2 on an unknown subcommand,
// where cobra alone would print the help and exit 0 ('hobbs memory bogus'),
// or, at the root, print its suggestions as three lines of its own. A group
// called without arguments still prints its help.
func rejectUnknownSubcommands(c *cobra.Command) {
	if c.HasSubCommands() && !c.Runnable() {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[groupAnnotation] = "true"
		c.Args = cobra.ArbitraryArgs
		c.SuggestionsMinimumDistance = 2
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			e := errs.Usagef("unknown command %q for %q", args[0], cmd.CommandPath()).WithHint("see '%s --help'", cmd.CommandPath())
			if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
				e.WithHint("did you mean %s? (see '%s --help')", strings.Join(s, " or "), cmd.CommandPath())
			}
			return e
		}
	}
	for _, sub := range c.Commands() {
		rejectUnknownSubcommands(sub)
	}
}
