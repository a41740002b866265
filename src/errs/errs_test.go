package errs

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestCodeAndHint(t *testing.T) {
	base := Usagef("bad key %q", "x").WithHint("remove it")
	wrapped := fmt.Errorf("loading: %w", base)
	if got := Code(wrapped); got != Usage {
		t.Fatalf("Code = %d, want %d", got, Usage)
	}
	if got := Hint(wrapped); got != "remove it" {
		t.Fatalf("Hint = %q", got)
	}
	if Code(nil) != OK || Code(errors.New("x")) != Failure {
		t.Fatal("default codes wrong")
	}
	w := Wrap(Missing, errors.New("exec: not found"), "docker")
	if Code(w) != Missing || w.Error() != "docker: exec: not found" {
		t.Fatalf("Wrap = %v (%d)", w, Code(w))
	}
	if Wrap(Missing, nil, "x") != nil {
		t.Fatal("Wrap(nil) must be nil")
	}
	inner := Missingf("no key").WithHint("run hobbs vault init")
	outer := Wrap(Failure, inner, "get secret")
	if Hint(outer) != "run hobbs vault init" {
		t.Fatalf("hint through wrap: %q", Hint(outer))
	}
}

func TestExitCodesDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []int{OK, Failure, Usage, Missing, Timeout, Interrupted} {
		if !strings.Contains(string(doc), fmt.Sprintf("| %d | ", c)) {
			t.Errorf("exit code %d is not in docs/cli.md's table", c)
		}
	}
}
