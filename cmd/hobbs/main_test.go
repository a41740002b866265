package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// exitCode maps errors to exit codes: its own, cobra's usage errors, a lock
// held by another process.
func TestErrorExitCodes(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "x.lock")
	unlock, err := safefile.Lock(lock, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	_, held := safefile.Lock(lock, 20*time.Millisecond)
	if !errors.Is(held, safefile.ErrLockTimeout) {
		t.Fatalf("second lock: %v", held)
	}
	for _, c := range []struct {
		name string
		err  error
		want int
	}{
		{"usage", errs.Usagef("bad"), errs.Usage},
		{"missing", errs.Missingf("no docker"), errs.Missing},
		{"wrapped failure", fmt.Errorf("ctx: %w", errs.Failf("broke")), errs.Failure},
		{"plain error", errors.New("disk full"), errs.Failure},
		{"cobra unknown command", errors.New(`unknown command "x" for "hobbs"`), errs.Usage},
		{"cobra arg count", errors.New("accepts 1 arg(s), received 2"), errs.Usage},
		{"lock held, bare", held, errs.Timeout},
		{"lock held, wrapped as a failure", errs.Wrap(errs.Failure, held, "tasks busy"), errs.Timeout},
	} {
		if got := exitCode(c.err); got != c.want {
			t.Errorf("%s: exitCode(%v) = %d, want %d", c.name, c.err, got, c.want)
		}
	}
}
