package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFormat: a passing package is its ok line (and a slow test's end);
// a failing test's output, the failing package's own output and a build
// failure are shown whole; nothing that is not JSON is dropped.
func TestFormat(t *testing.T) {
	in := `{"Action":"start","Package":"p/a"}
{"Action":"output","Package":"p/a","Output":"setup line\n"}
{"Action":"run","Package":"p/a","Test":"TestOK"}
{"Action":"output","Package":"p/a","Test":"TestOK","Output":"    a_test.go:4: quiet\n"}
{"Action":"pass","Package":"p/a","Test":"TestOK","Elapsed":0}
{"Action":"run","Package":"p/a","Test":"TestSlow"}
{"Action":"pass","Package":"p/a","Test":"TestSlow","Elapsed":12.5}
{"Action":"output","Package":"p/a","Output":"ok  \tp/a\t12.6s\n"}
{"Action":"pass","Package":"p/a","Elapsed":12.6}
{"Action":"start","Package":"p/b"}
{"Action":"output","Package":"p/b","Output":"b's TestMain\n"}
{"Action":"run","Package":"p/b","Test":"TestBad"}
{"Action":"run","Package":"p/b","Test":"TestBad/sub"}
{"Action":"output","Package":"p/b","Test":"TestBad/sub","Output":"    b_test.go:5: boom-sub\n"}
{"Action":"fail","Package":"p/b","Test":"TestBad/sub","Elapsed":0}
{"Action":"output","Package":"p/b","Test":"TestBad","Output":"--- FAIL: TestBad (0.00s)\n"}
{"Action":"fail","Package":"p/b","Test":"TestBad","Elapsed":0}
{"Action":"run","Package":"p/b","Test":"TestHang"}
{"Action":"output","Package":"p/b","Test":"TestHang","Output":"panic: test timed out\n"}
{"Action":"output","Package":"p/b","Output":"FAIL\tp/b\t600s\n"}
{"Action":"fail","Package":"p/b","Elapsed":600}
{"ImportPath":"p/c [p/c.test]","Action":"build-output","Output":"c/c.go:2:23: cannot use \"x\"\n"}
{"ImportPath":"p/c [p/c.test]","Action":"build-fail"}
not json at all
`
	var out strings.Builder
	failed := format(strings.NewReader(in), &out)
	got := out.String()
	if !failed {
		t.Error("not failed")
	}
	for _, want := range []string{"ok  \tp/a\t12.6s\n", "    ok    p/a TestSlow (12.5s)\n", "boom-sub", "--- FAIL: TestBad",
		"b's TestMain", "panic: test timed out", "FAIL\tp/b\t600s\n", "cannot use \"x\"", "not json at all"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	for _, not := range []string{"quiet", "setup line", "TestOK"} {
		if strings.Contains(got, not) {
			t.Errorf("a passing test's output %q is shown:\n%s", not, got)
		}
	}
	if strings.Index(got, "b's TestMain") > strings.Index(got, "FAIL\tp/b") {
		t.Errorf("the failing package's output comes after its FAIL line:\n%s", got)
	}
	var quiet strings.Builder
	if format(strings.NewReader(`{"Action":"output","Package":"p/a","Output":"ok  \tp/a\t0.1s\n"}
{"Action":"pass","Package":"p/a","Elapsed":0.1}
`), &quiet) || quiet.String() != "ok  \tp/a\t0.1s\n" {
		t.Errorf("a passing run: %q", quiet.String())
	}
}

// TestExitStatus: gotest exits as go test does: 0 when every test passed,
// go test's status when one failed (its output shown).
func TestExitStatus(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module gt\ngo 1.22\n")
	write("ok/ok_test.go", "package ok\nimport \"testing\"\nfunc TestOK(t *testing.T) {}\n")
	write("bad/bad_test.go", "package bad\nimport \"testing\"\nfunc TestBad(t *testing.T) { t.Error(\"boom-e2e-fmt\") }\n")
	var out, errOut strings.Builder
	if code := run(dir, []string{"-count=1", "./ok"}, &out, &errOut); code != 0 || !strings.HasPrefix(out.String(), "ok  \tgt/ok") {
		t.Errorf("passing: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	out.Reset()
	if code := run(dir, []string{"-count=1", "./..."}, &out, &errOut); code != 1 || !strings.Contains(out.String(), "boom-e2e-fmt") ||
		!strings.Contains(out.String(), "FAIL\tgt/bad") || !strings.Contains(out.String(), "ok  \tgt/ok") {
		t.Errorf("failing: exit %d\n%s%s", code, out.String(), errOut.String())
	}
}
