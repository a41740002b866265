package doctor

import (
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

func TestWriteResults(t *testing.T) {
	var sb strings.Builder
	err := WriteResults(&sb, []Result{
		{Check: "instance.layout", Status: OK, Message: "complete", Fix: "never shown"},
		{Check: "instance.permissions", Status: Fail, Message: "vault/keys is 0755, must be 0700", Fix: "chmod 0700 vault/keys"},
		{Check: "engine", Status: Warn, Message: "podman"},
	})
	want := "ok    instance.layout        complete\n" +
		"fail  instance.permissions   vault/keys is 0755, must be 0700\n" +
		"                             fix: chmod 0700 vault/keys\n" +
		"warn  engine                 podman\n"
	if err != nil || sb.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", sb.String(), want)
	}
}
