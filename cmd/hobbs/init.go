package main

import (
	"bufio"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hobbs-agent/hobbs"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/style"
)

func newInitCmd(a *app) *cobra.Command {
	var git, noInput, redo bool
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Create or complete your Hobbs instance directory",
		Long: `Create the instance directory with its layout and seed files.

init is idempotent: it creates only what is missing and never changes a file
that exists, so it is safe to run again after an upgrade. On a terminal it
asks a few questions to co-create foundation.md (your core values, principles
and long-term goals); --no-input skips them and leaves the template.

--foundation asks the questions again over the existing foundation.md (on a
terminal only): each answer replaces its section, a skipped question keeps
what the section holds. When foundation.md holds your own text, not just the
template, it asks first and keeps the current text in
foundation.md.TIME.bak before writing; without a yes nothing changes (exit 1).`,
		Example: `  hobbs init
  hobbs init --git                       # also make it a git repository
  hobbs init --foundation                # ask the foundation questions again
  HOBBS_HOME=~/hobbs-test hobbs init --no-input`,
		Args: usageArgs(cobra.NoArgs),
	}
	cmd.Flags().BoolVar(&git, "git", false, "make the instance a git repository (keys and logs ignored)")
	cmd.Flags().BoolVar(&noInput, "no-input", false, "do not ask questions; keep the templates as they are")
	cmd.Flags().BoolVar(&redo, "foundation", false, "ask the foundation questions again (terminal only; keeps a backup of your own text)")
	out := a.jsonFlag(cmd, "print what was created and kept as JSON")
	cmd.RunE = a.withInstance(func(cmd *cobra.Command, args []string, in instance.Instance) error {
		if redo {
			return a.redoFoundation(in, git, noInput, out)
		}
		opt := instance.InitOptions{Templates: hobbs.Templates, Git: git, Foundation: a.foundationInterview(noInput), Audit: a.audit(in)}
		res, err := instance.Init(in, opt)
		if err != nil {
			return err
		}
		if opt.Foundation != nil && !slices.Contains(res.Created, "foundation.md") {
			// An instance made without questions (hobbs run off a terminal,
			// --no-input) still has the template: ask them now.
			redo, err := instance.FillTemplateFoundation(in, opt.Foundation, opt.Audit)
			if err != nil {
				return err
			}
			if redo != nil && redo.Changed {
				a.status("wrote    foundation.md")
			}
		}
		return out.printLine(res, in.Root, func() {
			for _, p := range res.Created {
				a.status("created  %s", p)
			}
			if len(res.Created) == 0 {
				a.status("%s: already complete, nothing changed (%s kept)", in.Root, style.N(len(res.Kept), "path", "paths"))
			} else if len(res.Kept) > 0 {
				a.status("kept     %s", strings.Join(res.Kept, ", "))
			}
			if res.Git != "" {
				a.status("git: %s", res.Git)
			}
			a.status("next: hobbs doctor (checks the instance, config and engine), then hobbs run (starts a session)")
		})
	})
	return cmd
}

// foundationInterview is the foundation interview on a terminal, or nil
// when init must not ask (--no-input, stdin not a terminal).
func (a *app) foundationInterview(noInput bool) func(tpl []byte) ([]byte, error) {
	if noInput || !a.stdinIsTTY() {
		return nil
	}
	return func(tpl []byte) ([]byte, error) { return instance.CoCreateFoundation(tpl, a.in, a.errOut) }
}

// redoFoundation is init --foundation: it completes the instance as plain
// init does, then reruns the foundation questions over foundation.md. The
// confirmation and the answers are read from one reader, so neither takes
// the other's line.
func (a *app) redoFoundation(in instance.Instance, git, noInput bool, out *output) error {
	if noInput {
		return errs.Usagef("--foundation asks questions; it cannot be used with --no-input")
	}
	if !a.stdinIsTTY() {
		return errs.Usagef("--foundation asks its questions on a terminal, and stdin is not one").
			WithHint("run hobbs init --foundation in a terminal, or edit %s directly", in.Foundation())
	}
	res, err := instance.Init(in, instance.InitOptions{Templates: hobbs.Templates, Git: git, Audit: a.audit(in)})
	if res != nil {
		for _, p := range res.Created {
			a.status("created  %s", p)
		}
	}
	if err != nil {
		return err
	}
	r := bufio.NewReader(a.in)
	confirm := instance.AskRedoFoundation(r, a.errOut)
	interview := func(cur []byte) ([]byte, error) { return instance.CoCreateFoundation(cur, r, a.errOut) }
	redo, err := instance.RedoFoundation(in, interview, confirm, a.audit(in))
	if err != nil {
		return err
	}
	return out.printLine(redo, in.Foundation(), func() {
		switch {
		case !redo.Changed:
			a.status("foundation.md: no answers, nothing changed")
		case redo.Backup != "":
			a.status("wrote    foundation.md (your previous text is in %s)", redo.Backup)
		default:
			a.status("wrote    foundation.md")
		}
	})
}
