package launcher

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/plan"
)

// The watch stops the run once a path it watches has less than the
// minimum free, naming it; a path it cannot measure is skipped; above the
// minimum it runs until the session ends.
func TestWatchDisk(t *testing.T) {
	w := plan.DiskWatch{MinFree: 1 << 30, Paths: []string{"/ws", "/inst/memory", "/gone"}}
	var calls atomic.Int64
	free := func(p string) (int64, error) {
		switch p {
		case "/gone":
			return 0, errors.New("no such directory")
		case "/inst/memory":
			// The agent writes: free space drops on the fourth look.
			if calls.Add(1) >= 4 {
				return 300 << 20, nil
			}
		}
		return 5 << 30, nil
	}
	err := watchDisk(context.Background(), w, free, time.Millisecond)
	var full *DiskFullError
	if !errors.As(err, &full) || !errors.Is(err, ErrDiskFull) || full.Path != "/inst/memory" || full.Free != 300<<20 {
		t.Fatalf("err = %v", err)
	}
	if got := err.Error(); got != "the filesystem holding /inst/memory has 300.0 MiB free, below resources.min_free_disk (1 GiB)" {
		t.Errorf("message %q", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan error)
	go func() {
		ended <- watchDisk(ctx, w, func(string) (int64, error) { return 5 << 30, nil }, time.Millisecond)
	}()
	cancel()
	if err := <-ended; err != nil {
		t.Errorf("a session that ended: %v", err)
	}
	if err := watchDisk(ctx, plan.DiskWatch{}, free, time.Millisecond); err != nil {
		t.Errorf("no watch: %v", err)
	}
}

// Execute's side: the session's context ends when the disk fills, and the
// run's error says why, with the fix; a session that ended on its own is
// not called stopped.
func TestPlanWatchDisk(t *testing.T) {
	p := &plan.Plan{Session: "s1", DiskWatch: plan.DiskWatch{MinFree: 1 << 30, Paths: []string{"/ws"}}}
	var said []string
	rt := Runtime{DiskFree: func(string) (int64, error) { return 10 << 20, nil },
		Progress: func(f string, a ...any) { said = append(said, f) }}
	ctx, full := watchPlanDisk(context.Background(), p, rt)
	<-ctx.Done() // what the session's Run waits on
	hit := full()
	if hit == nil || hit.Path != "/ws" || len(said) != 1 {
		t.Fatalf("full = %v, said %q", hit, said)
	}
	err := diskFullError(p.Session, hit)
	if errs.Code(err) != errs.Failure || err.Error() != "session s1 stopped, what it wrote kept: the filesystem holding /ws has 10.0 MiB free, below resources.min_free_disk (1 GiB)" ||
		!errors.Is(err, ErrDiskFull) ||
		errs.AdviceOf(err).Kind != DiskFull {
		t.Errorf("error %v (%+v)", err, errs.AdviceOf(err))
	}
	rt.DiskFree = func(string) (int64, error) { return 5 << 30, nil }
	ctx, full = watchPlanDisk(context.Background(), p, rt)
	if full() != nil || ctx.Err() == nil {
		t.Error("a session that ended by itself was stopped by the watch")
	}
	// No watch: the context is the caller's.
	p.DiskWatch.MinFree = 0
	if ctx, full := watchPlanDisk(context.Background(), p, rt); ctx != context.Background() || full() != nil {
		t.Error("min_free_disk 0 watched")
	}
}

func TestMinFreeDiskConfig(t *testing.T) {
	for v, want := range map[string]int64{"": 1 << 30, "1g": 1 << 30, "512m": 512 << 20, "0": 0, "2048": 2048, "bogus": 1 << 30} {
		if got := (config.Resources{MinFreeDisk: v}).MinFreeDiskBytes(); got != want {
			t.Errorf("%q: %d, want %d", v, got, want)
		}
	}
}
