package errs

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestCodeAndAdvice(t *testing.T) {
	base := Usagef("bad key %q", "x").Advise("config.unknown-key", "key", "x")
	wrapped := fmt.Errorf("loading: %w", base)
	if got := Code(wrapped); got != Usage {
		t.Fatalf("Code = %d, want %d", got, Usage)
	}
	if got := AdviceOf(wrapped); got.Kind != "config.unknown-key" || got.Facts["key"] != "x" {
		t.Fatalf("AdviceOf = %+v", got)
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
	inner := Missingf("no key").Advise("vault.no-identity")
	outer := Wrap(Failure, inner, "get secret")
	if AdviceOf(outer).Kind != "vault.no-identity" {
		t.Fatalf("advice through wrap: %+v", AdviceOf(outer))
	}
	// The outermost advice is the one given.
	if a := AdviceOf(Wrap(Failure, inner, "x").(*Error).Advise("vault.locked")); a.Kind != "vault.locked" {
		t.Fatalf("outer advice: %+v", a)
	}
	if !AdviceOf(errors.New("x")).IsZero() || !AdviceOf(nil).IsZero() {
		t.Fatal("advice of a plain error")
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
