package memory

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/hobbs-agent/hobbs/src/errs"
)

// CheckFormat refuses a context format other than text, hook (the JSON a
// Claude Code hook returns) and json (the Context).
func CheckFormat(format string) error {
	if format != "text" && format != "hook" && format != "json" {
		return errs.Usagef("unknown format %q", format).Advise(BadFormat)
	}
	return nil
}

// CheckBudget refuses a budget that is not positive, and warns when a
// hook's budget is over HookLimit (the context will be cut to it).
func CheckBudget(budget int, format string) (warn string, err error) {
	if budget <= 0 {
		return "", errs.Usagef("--budget must be positive")
	}
	if format == "hook" && budget > HookLimit {
		warn = fmt.Sprintf("budget %d is over Claude Code's %d-character hook limit; the context will be cut", budget, HookLimit)
	}
	return warn, nil
}

// RenderContext builds the context opt describes (BuildHook for the hook
// format) and renders it in format: its text as it is, the hook's JSON or
// the Context as indented JSON (<, > and & as they are), each of these two
// with a newline. Like
// BuildContext it does not update last_accessed (Touch does).
func (s *Store) RenderContext(opt ContextOptions, format string) (*Context, []byte, error) {
	if err := CheckFormat(format); err != nil {
		return nil, nil, err
	}
	if format == "hook" {
		ctx, hook, err := s.BuildHook(opt)
		return ctx, append(hook, '\n'), err
	}
	ctx, err := s.BuildContext(opt)
	if err != nil || format == "text" {
		return ctx, []byte(ctxText(ctx)), err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // read by people and programs, as hobbs's other JSON
	err = enc.Encode(ctx)
	return ctx, b.Bytes(), err
}

func ctxText(c *Context) string {
	if c == nil {
		return ""
	}
	return c.Text
}

// Notices are what the user should know about c: the foundation's cost,
// and each section cut to fit the budget.
func (c *Context) Notices() []string {
	out := append([]string{}, c.Warnings...)
	for _, cut := range c.Cut {
		out = append(out, fmt.Sprintf("%s cut to fit the budget of %d characters", cut, c.Budget))
	}
	return out
}

// WriteContext is what hobbs memory context and hobbs agent context do
// with a context: render it (RenderContext), call rendered (the command
// reports the files it could not read), write it to w, warn of what it
// cost (its notices), and record the access of the memories it holds
// (Touch; a failure is a warning: the context is written).
func (s *Store) WriteContext(w io.Writer, opt ContextOptions, format string, rendered func(), warn func(format string, args ...any)) error {
	ctx, text, err := s.RenderContext(opt, format)
	rendered()
	if err != nil {
		return err
	}
	if _, err := w.Write(text); err != nil {
		return err
	}
	for _, n := range ctx.Notices() {
		warn("%s", n)
	}
	if err := s.Touch(ctx.Memories); err != nil {
		warn("last_accessed not updated: %v", err)
	}
	return nil
}
