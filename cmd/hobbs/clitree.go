package main

// The conventions of hobbs's command tree that cobra does not give
// (docs/cli.md): a flag parsing error is a usage error (exit 2) that names
// the nearest flag; a command that only groups subcommands (the root too)
// rejects an unknown one with exit 2, one error line and one did-you-mean
// hint, and prints its help when called alone; the completion command has
// examples like every other; errors print as "hobbs: " lines and a hint,
// and map to the exit codes of package errs.

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

// setupTree applies the conventions to root, once every command is added.
func setupTree(root *cobra.Command) {
	root.SetFlagErrorFunc(flagError)
	addCompletion(root)
	rejectUnknownSubcommands(root)
}

// usageArgs wraps a cobra positional-args validator so its errors exit 2.
func usageArgs(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := v(cmd, args); err != nil {
			return &errs.Error{Code: errs.Usage, Msg: err.Error()}
		}
		return nil
	}
}

// exitCode maps cobra's own usage errors (unknown command, bad arg count)
// to exit 2 and a lock still held by another process to 124, however the
// domain package wrapped it; everything else carries its code in the errs
// chain.
func exitCode(err error) int {
	if errors.Is(err, safefile.ErrLockTimeout) {
		return errs.Timeout
	}
	var e *errs.Error
	if errors.As(err, &e) {
		return e.Code
	}
	if isUsageMessage(err.Error()) {
		return errs.Usage
	}
	return errs.Failure
}

// report prints err, which ran hobbs args, on w: a "hobbs: " line per line
// of it, then its hint (as hint words it); a usage error without one (but
// for a file's, which names its line) gets the command's --help as its hint.
func report(w io.Writer, root *cobra.Command, args []string, err error, hint func(error) string) {
	for _, line := range strings.Split(err.Error(), "\n") {
		style.Fprint(w, style.Fail, "hobbs:")
		fmt.Fprintf(w, " %s\n", line)
	}
	h := hint(err)
	if h == "" && exitCode(err) == errs.Usage && !strings.Contains(err.Error(), ".yaml:") {
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
	var e error = &errs.Error{Code: errs.Usage, Msg: err.Error()}
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
		e = withHint(e, "did you mean --%s? (see '%s --help')", s, c.CommandPath())
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

// isGroup reports whether c only holds subcommands.
func isGroup(c *cobra.Command) bool { return c.Annotations[groupAnnotation] == "true" }

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
			e := errs.Usagef("unknown command %q for %q", args[0], cmd.CommandPath())
			if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
				return withHint(e, "did you mean %s? (see '%s --help')", strings.Join(s, " or "), cmd.CommandPath())
			}
			return withHint(e, "see '%s --help'", cmd.CommandPath())
		}
	}
	for _, sub := range c.Commands() {
		rejectUnknownSubcommands(sub)
	}
}

// usageMessages are how cobra and pflag word the usage errors they make
// themselves (an unknown command or flag, a wrong number of arguments, a
// missing flag), which carry no exit code of their own.
var usageMessages = []string{"unknown command", "unknown flag", "unknown shorthand", "accepts ", "requires at least",
	"requires at most", "invalid argument", "flag needs an argument", "required flag", "if any flags in the group"}

// isUsageMessage reports whether msg is a usage error of the command-line
// parser (exit 2).
func isUsageMessage(msg string) bool {
	for _, p := range usageMessages {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}
