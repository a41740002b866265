package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hobbs-agent/hobbs/src/errs"
)

// words is how a hint reads for one kind of advice: the facts it needs go in
// as {name}. A kind whose words need more than substitution (a list joined,
// a choice) has a function instead.
type words func(f errs.Facts) string

// say is the words of a hint written as text with {fact} placeholders.
func say(text string) words {
	return func(f errs.Facts) string { return fill(text, f) }
}

// fill replaces each {name} in text with f[name]. A placeholder without a
// fact stays as written, so a missing fact shows rather than vanishing.
func fill(text string, f errs.Facts) string {
	if !strings.Contains(text, "{") {
		return text
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(text, '{')
		if i < 0 {
			break
		}
		j := strings.IndexByte(text[i:], '}')
		if j < 0 {
			break
		}
		name := text[i+1 : i+j]
		v, ok := f[name]
		if !ok || strings.ContainsAny(name, " {") {
			b.WriteString(text[:i+1])
			text = text[i+1:]
			continue
		}
		b.WriteString(text[:i])
		b.WriteString(v)
		text = text[i+j+1:]
	}
	b.WriteString(text)
	return b.String()
}

// hintTables are the words of every kind of advice, a table per domain
// (hints_<domain>.go). A kind appears in exactly one (TestEveryKindHasWords).
var hintTables = []map[errs.Kind]words{
	vaultHints, instanceHints, configHints, taskHints, subagentHints,
	doctorHints, engineHints,
	imageHints, psHints,
	memoryHints, playbookHints, scheduleHints, serveHints, chatHints, reviewHints,
	policyHints, approvalHints,
	planHints, launcherHints, runnerHints, backupHints,
}

// hintWords is every table merged, built once.
var hintWords = func() map[errs.Kind]words {
	m := map[errs.Kind]words{}
	for _, t := range hintTables {
		for k, w := range t {
			if _, dup := m[k]; dup {
				panic("hint words twice for " + string(k))
			}
			m[k] = w
		}
	}
	return m
}()

// adviceText words a: the one place a hint is rendered. Advice of a kind
// with no words renders as nothing (a test keeps every kind worded).
func adviceText(a errs.Advice) string {
	if a.IsZero() {
		return ""
	}
	if w, ok := hintWords[a.Kind]; ok {
		return w(a.Facts)
	}
	return ""
}

// hinted is an error the command layer makes itself, with its hint worded
// where it is made (withHint).
type hinted struct {
	err  error
	hint string
}

func (h *hinted) Error() string { return h.err.Error() }
func (h *hinted) Unwrap() error { return h.err }

// withHint gives err, an error of the command layer's own, the hint
// format words.
func withHint(err error, format string, args ...any) error {
	return &hinted{err: err, hint: fmt.Sprintf(format, args...)}
}

// hintOf is the hint for err: the command layer's own (withHint), else the
// words of the first advice in its chain, outermost first.
func hintOf(err error) string {
	var h *hinted
	if errors.As(err, &h) {
		return h.hint
	}
	return adviceText(errs.AdviceOf(err))
}
