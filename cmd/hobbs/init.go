package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
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
			if !noInput && opt.Foundation == nil && slices.Contains(res.Created, "foundation.md") {
				a.status("stdin is not a terminal, so the foundation questions were not asked: foundation.md holds the template " +
					"(hobbs init --foundation in a terminal asks them)")
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
	return func(tpl []byte) ([]byte, error) { return coCreateFoundation(tpl, a.in, a.errOut) }
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
		return withHint(errs.Usagef("--foundation asks its questions on a terminal, and stdin is not one"),
			"run hobbs init --foundation in a terminal, or edit %s directly", in.Foundation())
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
	confirm := askRedoFoundation(r, a.errOut)
	interview := func(cur []byte) ([]byte, error) { return coCreateFoundation(cur, r, a.errOut) }
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

// foundationQuestions are asked when co-creating foundation.md. Each answer
// fills the section of the same heading (instance.AnswerFoundation).
var foundationQuestions = []struct{ Heading, Prompt string }{
	{"Core Values", "What do you value most? (separate items with ';')"},
	{"Principles", "Which principles should Hobbs follow when working for you? (';' separated)"},
	{"Long-term Goals", "What long-term goals should Hobbs help you with? (';' separated)"},
}

// coCreateFoundation asks foundationQuestions on out, reads one answer line
// each from in, and returns the template (or a foundation being redone) with
// each answered section filled with bullet points. An empty answer keeps the
// section's text. A *bufio.Reader is read as it is, so a caller that asked
// something before on the same input loses no buffered answer.
func coCreateFoundation(template []byte, in io.Reader, out io.Writer) ([]byte, error) {
	fmt.Fprintln(out, "Let's write your foundation: the values and goals Hobbs always keeps in mind.")
	fmt.Fprintln(out, "Press Enter to skip a question; you can edit foundation.md any time.")
	r, ok := in.(*bufio.Reader)
	if !ok {
		r = bufio.NewReader(in)
	}
	doc := template
	for _, q := range foundationQuestions {
		fmt.Fprintf(out, "\n%s\n> ", q.Prompt)
		line, err := r.ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		doc = instance.AnswerFoundation(doc, q.Heading, line)
		if errors.Is(err, io.EOF) {
			break
		}
	}
	fmt.Fprintln(out)
	return doc, nil
}

// askRedoFoundation is instance.RedoFoundation's confirm on a terminal: it
// asks on w whether to answer the questions again over the owner's text,
// and reads the answer from r (the reader the interview goes on with, so
// neither takes the other's line); only y or yes is a yes.
func askRedoFoundation(r *bufio.Reader, w io.Writer) func() (bool, error) {
	return func() (bool, error) {
		fmt.Fprintf(w, "foundation.md holds your own text. Answer the questions again over it?\n"+
			"Each answer replaces its section; the current file is kept in foundation.md.TIME.bak. [y/N] ")
		line, err := r.ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return false, err
		}
		ans := strings.ToLower(strings.TrimSpace(line))
		return ans == "y" || ans == "yes", nil
	}
}
