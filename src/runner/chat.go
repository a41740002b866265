package runner

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/launcher"
	"github.com/hobbs-agent/hobbs/src/plan"
)

// A chat turn (plan.KindChat: what it may do, plan's chat.go) is carried
// out here: the conversation on Claude Code's standard input, the reply
// read from its JSON result with every secret value of the run masked.

// maxChatOutput bounds what the launcher keeps of a chat turn's standard
// output (its end: the JSON result comes last).
const maxChatOutput = 1 << 20

// ChatResult is what a chat turn came to.
type ChatResult struct {
	Reply  string        // the result's text, every secret value masked
	Result *ClaudeResult // Claude Code's JSON result, when there was one
	Code   int           // the agent command's exit code
}

// RunChat carries out chat turn plan p (never as root: RefuseRoot) with
// input (the conversation) on Claude Code's standard input, and returns
// its reply: the text of Claude Code's JSON result. A turn without a
// successful result is an error that says why (the time limit, the turn
// limit, no result). The reply and the error hold no secret value of the
// run: every value the run got (env: variables, bound secrets) is
// replaced by "[secret NAME]" in the forms the proxy's masks know
// (policy.NameMask), since the agent holds the env: values and its output
// is its own to write.
func RunChat(ctx context.Context, p *plan.Plan, rt launcher.Runtime, input []byte) (ChatResult, error) {
	if p.Kind != plan.KindChat {
		return ChatResult{}, errs.Failf("internal: RunChat of a %s plan", p.Kind)
	}
	if err := launcher.RefuseRoot(); err != nil {
		return ChatResult{}, err
	}
	out := &tailBuffer{max: maxChatOutput}
	rt.Stdin, rt.Stdout, rt.Detached = bytes.NewReader(input), out, false
	code, mask, runErr := launcher.ExecuteMasked(ctx, p, rt)
	return chatReply(p, code, runErr, []byte(out.String()), mask, rt.Words)
}

// chatReply decides what a chat turn came to from its exit code, the
// launcher's error and its standard output, with mask applied to every
// text that leaves; a turn that could not run says what to do in
// parentheses, its advice as words gives it (nil: it does not).
func chatReply(p *plan.Plan, code int, runErr error, stdout []byte, mask func(string) string, words func(errs.Advice) string) (ChatResult, error) {
	if mask == nil {
		mask = func(s string) string { return s }
	}
	res := ChatResult{Code: code}
	r, ok := ParseResult(stdout)
	if ok {
		res.Result = &r
	}
	fail := func(format string, args ...any) (ChatResult, error) {
		return res, &errs.Error{Code: errs.Failure, Msg: mask(fmt.Sprintf(format, args...))}
	}
	switch {
	case runErr != nil && code == errs.Timeout:
		return fail("the turn stopped at its time limit (%s) before Hobbs replied", p.TimeoutText)
	case runErr != nil && errs.Code(runErr) == launcher.ExitStopped:
		return fail("the turn was stopped before Hobbs replied")
	case runErr != nil:
		msg := "the turn could not run: " + firstLine(runErr.Error())
		if a := errs.AdviceOf(runErr); words != nil && !a.IsZero() {
			if w := words(a); w != "" {
				msg += " (" + w + ")"
			}
		}
		// The launcher's code stays: a missing image or Claude Code is 3.
		return res, &errs.Error{Code: errs.Code(runErr), Msg: mask(msg)}
	case !ok:
		return fail("Hobbs gave no reply: no result from Claude Code (exit %d)", code)
	case r.Subtype == SubtypeMaxTurns:
		return fail("Hobbs gave no reply: the turn reached its limit of %d turns", p.Claude.MaxTurns)
	case r.Subtype != SubtypeSuccess || r.IsError:
		why := r.Subtype
		if len(r.Errors) > 0 {
			why += ": " + firstLine(strings.Join(r.Errors, "; "))
		} else if t := strings.TrimSpace(r.Result); t != "" {
			why += ": " + firstLine(t)
		}
		return fail("Hobbs gave no reply: Claude Code's result is %s", why)
	case strings.TrimSpace(r.Result) == "":
		return fail("Hobbs gave an empty reply")
	}
	res.Reply = mask(r.Result)
	return res, nil
}
