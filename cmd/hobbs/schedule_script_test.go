package main

import (
	"path/filepath"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/hobbs-agent/hobbs/src/playbook"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

func init() {
	scriptCmds["holdrunlock"] = cmdHoldRunLock
}

// holdrunlock INSTANCE NAME: take the run lock of playbook NAME in the
// instance directory INSTANCE, as a run in another process would, and hold
// it until the scenario ends.
func cmdHoldRunLock(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: holdrunlock INSTANCE NAME")
	}
	dir := ts.MkAbs(args[0])
	unlock, err := playbook.LockRun(safefile.Beneath(dir), filepath.Join(dir, ".locks", playbook.RunLockName(args[1])+".lock"), args[1])
	ts.Check(err)
	ts.Defer(unlock)
}
