package runner

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hobbs-agent/hobbs/src/task"
)

// result is Claude Code's JSON result as the Agent SDK's reference shapes
// it (SDKResultMessage), on one line as --output-format json prints it.
func result(subtype string, isError bool, turns int, text string) string {
	return fmt.Sprintf(`{"type":"result","subtype":%q,"is_error":%v,"duration_ms":1200,"duration_api_ms":900,"num_turns":%d,"result":%q,"session_id":"5f1c","total_cost_usd":0.0312,"usage":{"input_tokens":10,"output_tokens":20}}`,
		subtype, isError, turns, text)
}

// The outcome comes from the run: ok only when Claude Code's result is a
// success and the report says ok; a limit, an error result, a failed or
// missing Outcome line, a non-zero exit, the time limit, or output with no
// result at all are failed.
func TestRunOutcome(t *testing.T) {
	okReport := "## Outcome\nok — paid 3 invoices\n\n## What happened\n- done\n"
	for _, c := range []struct {
		name    string
		code    int
		runErr  error
		out     string
		status  string
		why     string
		limit   bool
		figures bool
	}{
		{"ok", 0, nil, result("success", false, 5, okReport), task.OK, "", false, true},
		{"ok on the heading's line", 0, nil, result("success", false, 5, "## Outcome: ok\n"), task.OK, "", false, true},
		{"after other output", 0, nil, "noise\n" + result("success", false, 5, okReport) + "\n", task.OK, "", false, true},
		{"report failed", 0, nil, result("success", false, 5, "## Outcome: failed — the bank refused\n"), task.Failed, "the report's outcome is failed", false, true},
		{"report failed next line", 0, nil, result("success", false, 5, "## Outcome\n\nfailed - 403\n"), task.Failed, "outcome is failed", false, true},
		{"no outcome line", 0, nil, result("success", false, 5, "All done!"), task.Failed, "no ## Outcome line", false, true},
		{"empty outcome section", 0, nil, result("success", false, 5, "## Outcome\n\n## What happened\n"), task.Failed, "no ## Outcome line", false, true},
		{"turn limit", 1, nil, result("error_max_turns", true, 7, ""), task.Failed, "turn limit reached", true, true},
		{"cost limit", 1, nil, result("error_max_budget_usd", true, 3, ""), task.Failed, "cost limit reached", true, true},
		{"error result", 1, nil, result("error_during_execution", true, 2, ""), task.Failed, "error_during_execution", false, true},
		{"success with is_error", 1, nil, result("success", true, 1, "Not logged in · Please run /login"), task.Failed, "is_error", false, true},
		{"ok report, non-zero exit", 2, nil, result("success", false, 5, okReport), task.Failed, "exited 2", false, true},
		{"no result", 0, nil, "## Outcome\nok\n", task.Failed, "no parseable result", false, false},
		{"empty", 0, nil, "", task.Failed, "no parseable result", false, false},
		{"not a result", 0, nil, `{"type":"assistant","subtype":"x"}`, task.Failed, "no parseable result", false, false},
		{"time limit", 124, errors.New("session run1 stopped at its time limit (5s)"), "", task.Failed, "time limit reached", true, false},
		{"session error", 1, errors.New("the egress proxy exited"), result("success", false, 5, okReport), task.Failed, "session failed", false, true},
	} {
		o := RunOutcome(c.code, c.runErr, []byte(c.out))
		if o.Status != c.status || !strings.Contains(o.Why, c.why) || o.Limit != c.limit || (o.Result != nil) != c.figures {
			t.Errorf("%s: %+v, want %s (%q) limit %v figures %v", c.name, o, c.status, c.why, c.limit, c.figures)
		}
		if c.status == task.OK && o.Why != "" {
			t.Errorf("%s: an ok run with a reason %q", c.name, o.Why)
		}
	}
	o := RunOutcome(0, nil, []byte(result("success", false, 5, okReport)))
	if o.Report != okReport || o.Result.NumTurns != 5 || o.Result.TotalCostUSD != 0.0312 || o.Result.SessionID != "5f1c" {
		t.Errorf("figures and report: %+v %+v", o, o.Result)
	}
	// An error result's errors stand in for its (absent) text.
	o = RunOutcome(1, nil, []byte(`{"type":"result","subtype":"error_during_execution","is_error":true,"num_turns":1,"errors":["API Error: 500"]}`))
	if o.Report != "API Error: 500" {
		t.Errorf("errors as the report: %q", o.Report)
	}
}

func TestReportOutcome(t *testing.T) {
	for report, want := range map[string]string{
		"## Outcome\nok - done":             "ok",
		"## Outcome\n\n  OK — done":         "ok",
		"# Report\n## outcome: Failed.":     "failed",
		"### Outcome — failed":              "failed",
		"## Outcome\n## What happened\n- x": "",
		"## Outcomes\nok":                   "",
		"Outcome: ok":                       "",
		"no report":                         "",
	} {
		if got := ReportOutcome(report); got != want {
			t.Errorf("%q: %q, want %q", report, got, want)
		}
	}
}
