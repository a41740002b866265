// Package enginetest gives tests a FAKE container engine: a shell script
// standing in for the docker CLI, so that code driving the engine is tested
// without one. The real engine is exercised by tests/e2e.
package enginetest

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/hobbs-agent/hobbs/src/engine"
)

// Script is a FAKE docker CLI: a shell script that logs each call's
// arguments, then runs body. It returns the engine and a reader of the
// calls so far.
func Script(t testing.TB, body string) (engine.CLI, func() []string) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("shell script engine")
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "calls")
	bin := filepath.Join(dir, "docker")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho \"$*\" >> "+log+"\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return engine.CLI{Bin: bin}, func() []string {
		b, _ := os.ReadFile(log)
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
}
