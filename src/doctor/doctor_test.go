package doctor

import (
	"context"
	"strings"
	"testing"

	"github.com/hobbs-agent/hobbs/src/errs"
)

func TestSummary(t *testing.T) {
	ok, missing, broken, warn := Result{Status: OK}, Result{Status: Fail, Missing: true}, Result{Status: Fail}, Result{Status: Warn}
	for _, c := range []struct {
		name           string
		rs             []Result
		ok, warn, fail int
		onlyMissing    bool
		line           string
		code           int
	}{
		{"healthy", []Result{ok, warn}, 1, 1, 0, false, "1 ok, 1 warning", errs.OK},
		{"only the engine is missing", []Result{ok, missing}, 1, 0, 1, true, "", errs.Missing},
		{"missing and broken", []Result{missing, broken, ok}, 1, 0, 2, false, "", errs.Failure},
		{"broken", []Result{broken}, 0, 0, 1, false, "", errs.Failure},
		{"nothing", nil, 0, 0, 0, false, "0 ok, 0 warnings", errs.OK},
	} {
		o, w, f, m := Summary(c.rs)
		if o != c.ok || w != c.warn || f != c.fail || m != c.onlyMissing {
			t.Errorf("%s: Summary = %d, %d, %d, %v; want %d, %d, %d, %v", c.name, o, w, f, m, c.ok, c.warn, c.fail, c.onlyMissing)
		}
		line, err := Verdict(c.rs)
		if line != c.line || errs.Code(err) != c.code {
			t.Errorf("%s: Verdict = %q, %v; want %q, exit %d", c.name, line, err, c.line, c.code)
		}
	}
	if _, err := Verdict([]Result{ok, broken}); err == nil || err.Error() != "1 check failed (1 ok, 0 warnings)" {
		t.Errorf("failure message: %v", err)
	}
}

// Run runs the checks in the order given, names each result after its
// check unless the check named it, and keeps a check's results in its order.
func TestRun(t *testing.T) {
	check := func(rs ...Result) func(context.Context, *Env) []Result {
		return func(context.Context, *Env) []Result { return rs }
	}
	got := Run(context.Background(), &Env{}, []Check{
		{Name: "b", Run: check(Result{Status: OK, Message: "1"}, Result{Status: Warn, Message: "2"})},
		{Name: "a", Run: check()},
		{Name: "c", Run: check(Result{Check: "c.own", Status: Fail, Message: "3"})},
	})
	var line []string
	for _, r := range got {
		line = append(line, r.Check+":"+r.Message)
	}
	if s := strings.Join(line, " "); s != "b:1 b:2 c.own:3" {
		t.Errorf("Run: %s", s)
	}
}
