package launcher

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/plan"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// A full disk is not the agent's to cause. The agent's shares and its
// workspace are host directories with no quota: an agent that writes
// without end fills the filesystem that holds them, and with it the
// user's. While a run is live the launcher watches the free space of
// those filesystems (DiskWatch in the plan) and stops the run, as hobbs
// stop does, once any has less than resources.min_free_disk: what was
// written stays, and the room left lets the session end cleanly and its
// record (a headless run's task) be written.

// diskWatchInterval is how often the launcher looks at the free space.
const diskWatchInterval = 2 * time.Second

// ErrDiskFull is what a *DiskFullError wraps.
var ErrDiskFull = errors.New("free disk below resources.min_free_disk")

// DiskFullError is a filesystem the agent writes to with less free space
// than the run keeps.
type DiskFullError struct {
	Path      string
	Free, Min int64
}

func (e *DiskFullError) Error() string {
	return fmt.Sprintf("the filesystem holding %s has %s free, below resources.min_free_disk (%s)", e.Path, humanSize(e.Free), safefile.FormatSize(e.Min))
}

func (e *DiskFullError) Unwrap() error { return ErrDiskFull }

// freeSpace is the space an unprivileged user may still write on the
// filesystem holding path (statfs: available blocks times their size).
func freeSpace(path string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// watchDisk returns once a path of w has less than w.MinFree free (a
// *DiskFullError naming it) or ctx is done (nil). free is the measure (freeSpace; tests give their own), looked at
// at once and every interval. A path it cannot measure is skipped: the
// run's own errors say what is wrong with it.
func watchDisk(ctx context.Context, w plan.DiskWatch, free func(string) (int64, error), interval time.Duration) error {
	if w.MinFree <= 0 || len(w.Paths) == 0 {
		<-ctx.Done()
		return nil
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		for _, p := range w.Paths {
			n, err := free(p)
			if err == nil && n < w.MinFree {
				return &DiskFullError{Path: p, Free: n, Min: w.MinFree}
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// humanSize says n bytes to a tenth of the largest binary unit.
func humanSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// diskFullError is the error of a run its disk watch stopped.
func diskFullError(session string, cause *DiskFullError) error {
	return (&errs.Error{Code: errs.Failure, Msg: fmt.Sprintf("session %s stopped, what it wrote kept", session), Err: cause}).
		Advise(DiskFull)
}
