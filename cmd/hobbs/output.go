package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/hobbs-agent/hobbs/src/frontmatter"
	"github.com/hobbs-agent/hobbs/src/style"
)

// output prints a command's result: as indented JSON with --json, else as
// the command's own text.
type output struct {
	a    *app
	json bool
}

// jsonFlag adds --json, described by usage, to cmd and returns the printer
// it switches.
func (a *app) jsonFlag(cmd *cobra.Command, usage string) *output {
	o := &output{a: a}
	cmd.Flags().BoolVar(&o.json, "json", false, usage)
	return o
}

// print writes v as JSON with --json, else calls text with stdout. The
// files the command's store could not read are reported on stderr first.
func (o *output) print(v any, text func(w io.Writer) error) error {
	o.a.reportProblems()
	if o.json {
		return o.a.printJSON(v)
	}
	return text(o.a.out)
}

// printLine is print for a result whose text is one line on stdout (an
// id, a path, a key): say prints its status lines on stderr first; both
// only without --json.
func (o *output) printLine(v any, line string, say func()) error {
	return o.print(v, func(w io.Writer) error {
		if say != nil {
			say()
		}
		fmt.Fprintln(w, line)
		return nil
	})
}

// printTable is print for a listing: --json the list; else the header and
// a line per item (cells separated by tabs), aligned, or, for no items,
// the status line none when there is one.
func printTable[T any](o *output, list []T, none, header string, row func(T) string) error {
	return o.print(list, func(w io.Writer) error {
		if len(list) == 0 && none != "" {
			o.a.status("%s", none)
			return nil
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, header)
		for _, item := range list {
			fmt.Fprintln(tw, row(item))
		}
		return tw.Flush()
	})
}

// printJSON writes v as indented JSON on stdout, with <, > and & as they
// are (it is read by people and programs, not embedded in HTML).
func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.out)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// status prints a status line on stderr.
func (a *app) status(format string, args ...any) { fmt.Fprintf(a.errOut, format+"\n", args...) }

// warn prints a warning on stderr: something was skipped or not recorded,
// and the command went on.
func (a *app) warn(format string, args ...any) {
	style.Fprint(a.errOut, style.Warn, "hobbs: warning:")
	fmt.Fprintf(a.errOut, " "+format+"\n", args...)
}

// hint prints the next step on stderr, as Main prints an error's hint.
func (a *app) hint(format string, args ...any) {
	style.Fprint(a.errOut, style.Hint, "hobbs: hint:")
	fmt.Fprintf(a.errOut, " "+format+"\n", args...)
}

// reportProblems runs, once, the report a store helper left in a.problems
// (withMemory: the memory files it could not parse). output.print runs it
// before the result, so the warnings come first; the helper runs it when the
// command ends without printing one.
func (a *app) reportProblems() {
	if f := a.problems; f != nil {
		a.problems = nil
		f()
	}
}

// warnEach prints each of probs (files that could not be read, and were
// skipped) as a warning, with suffix.
func (a *app) warnEach(probs []frontmatter.Problem, suffix string) {
	for _, p := range probs {
		a.warn("%s%s", p, suffix)
	}
}

// printLint prints what a lint command found, path:line: reason a line
// (--json: the list), and returns fail when it found anything; else it
// says ok.
func (a *app) printLint(out *output, probs []frontmatter.Problem, fail error, ok string) error {
	if probs == nil {
		probs = []frontmatter.Problem{}
	}
	err := out.print(probs, func(w io.Writer) error {
		for _, p := range probs {
			fmt.Fprintln(w, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(probs) > 0 {
		return fail
	}
	a.status("%s", ok)
	return nil
}

// orDash is s, or "-" for an empty field of a table.
func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}
