package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/hobbs-agent/hobbs/src/task"
)

// A headless run's outcome comes from the run, never from the exit status
// alone: Claude Code in print mode with --output-format json prints one
// JSON result, whose fields are those of the Agent SDK's result message
// (https://code.claude.com/docs/en/agent-sdk/typescript, SDKResultMessage;
// https://code.claude.com/docs/en/headless, "Get structured output"), and
// the run-playbook skill ends its final message — the result's text — with
// a report whose "## Outcome" line says ok or failed. A run is ok only when
// Claude Code exited 0 with subtype "success" and is_error false, and the
// report says ok; a run with no parseable result is failed.

// ClaudeResult is Claude Code's JSON result of a print-mode run.
type ClaudeResult struct {
	Type         string   `json:"type"`    // "result"
	Subtype      string   `json:"subtype"` // success, error_max_turns, error_max_budget_usd, error_during_execution, …
	IsError      bool     `json:"is_error"`
	Result       string   `json:"result"` // the final message (on success)
	NumTurns     int      `json:"num_turns"`
	TotalCostUSD float64  `json:"total_cost_usd"`
	SessionID    string   `json:"session_id"`
	Errors       []string `json:"errors"` // what went wrong, on the error subtypes
}

// Result subtypes the outcome tells apart (any other is a failure).
const (
	SubtypeSuccess   = "success"
	SubtypeMaxTurns  = "error_max_turns"
	SubtypeMaxBudget = "error_max_budget_usd"
)

// ParseResult reads Claude Code's JSON result from a run's standard
// output: the whole output, or else its last line that is one. ok is false
// when there is none.
func ParseResult(out []byte) (r ClaudeResult, ok bool) {
	try := func(b []byte) bool {
		r = ClaudeResult{}
		return json.Unmarshal(b, &r) == nil && r.Type == "result" && r.Subtype != ""
	}
	out = bytes.TrimSpace(out)
	if try(out) {
		return r, true
	}
	lines := bytes.Split(out, []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		if l := bytes.TrimSpace(lines[i]); bytes.HasPrefix(l, []byte("{")) && try(l) {
			return r, true
		}
	}
	return ClaudeResult{}, false
}

// Outcome is what a headless run came to.
type Outcome struct {
	Status string // task.OK or task.Failed
	Why    string // for a failed run: why, in a few words
	Limit  bool   // a limit of the run stopped it (turns, cost, time)
	Result *ClaudeResult
	Report string // the run's final message: the result's text, or its raw output
}

// RunOutcome decides a run's outcome from its exit code, the launcher's
// error (the time limit, a stop), and its standard output.
func RunOutcome(code int, runErr error, stdout []byte) Outcome {
	o := Outcome{Status: task.Failed, Report: string(stdout)}
	r, ok := ParseResult(stdout)
	if ok {
		o.Result, o.Report = &r, r.Result
		if r.Result == "" && len(r.Errors) > 0 {
			o.Report = strings.Join(r.Errors, "\n")
		}
	}
	switch {
	case runErr != nil && code == 124:
		o.Why, o.Limit = "time limit reached", true
	case runErr != nil:
		o.Why = "the session failed: " + firstLine(runErr.Error())
	case !ok:
		o.Why = fmt.Sprintf("no parseable result from Claude Code (exit %d)", code)
	case r.Subtype == SubtypeMaxTurns:
		o.Why, o.Limit = "turn limit reached", true
	case r.Subtype == SubtypeMaxBudget:
		o.Why, o.Limit = "cost limit reached", true
	case r.Subtype != SubtypeSuccess || r.IsError:
		o.Why = "Claude Code's result is " + r.Subtype
		if r.IsError {
			o.Why += " with is_error"
		}
	case code != 0:
		o.Why = fmt.Sprintf("Claude Code exited %d", code)
	default:
		switch v := ReportOutcome(r.Result); v {
		case task.OK:
			o.Status, o.Why = task.OK, ""
		case "":
			o.Why = "the report has no ## Outcome line"
		default:
			o.Why = "the report's outcome is " + v
		}
	}
	return o
}

var outcomeRe = regexp.MustCompile(`(?im)^#{1,6}[ \t]*outcome\b[ \t]*[:—–-]?[ \t]*(.*)$`)

// ReportOutcome is what the report's "## Outcome" section says: its first
// word, lower-case ("ok", "failed", …), from the heading's line
// ("## Outcome: failed") or the first non-empty line after it; "" for a
// report without one.
func ReportOutcome(report string) string {
	m := outcomeRe.FindStringSubmatchIndex(report)
	if m == nil {
		return ""
	}
	v := strings.TrimSpace(report[m[2]:m[3]])
	if v == "" {
		for _, l := range strings.Split(report[m[1]:], "\n") {
			if v = strings.TrimSpace(l); v != "" {
				break
			}
		}
		if strings.HasPrefix(v, "#") {
			return ""
		}
	}
	w := strings.FieldsFunc(strings.ToLower(v), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r == '_')
	})
	if len(w) == 0 {
		return ""
	}
	return w[0]
}
