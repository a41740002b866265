package serve

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
)

// One hobbs serve per instance: the one that holds the serve lock writes
// its pid beside it, so that a second one (whose listen fails first, the
// address being taken) can say which process serves the instance.

// AlreadyServing is the advice of a second hobbs serve for an instance
// (facts: pid, instance).
const AlreadyServing errs.Kind = "serve.already-serving"

// pidFile is where the serving process's pid is.
func pidFile(in instance.Instance) string { return filepath.Join(in.Locks(), "serve.pid") }

// writePID records this process as the one serving in (its lock held).
func writePID(in instance.Instance) {
	_ = in.FS().Write(pidFile(in), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600)
}

// removePID removes the record at the service's end.
func removePID(in instance.Instance) { _ = in.FS().Remove(pidFile(in)) }

// serving reports whether another process holds in's serve lock, and
// its pid when it recorded one (0: unknown).
func serving(in instance.Instance) (pid int, held bool) {
	unlock, err := in.FS().Lock(in.Lock("serve"), 100*time.Millisecond)
	if err == nil {
		unlock()
		return 0, false
	}
	data, err := in.FS().ReadFile(pidFile(in), 64)
	if err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && n > 0 {
			return n, true
		}
	}
	return 0, true
}

// alreadyServing is the error of a hobbs serve started while pid serves in.
func alreadyServing(in instance.Instance, pid int) error {
	who := "another hobbs serve"
	if pid > 0 {
		who += " (pid " + strconv.Itoa(pid) + ")"
	}
	return errs.Failf("%s already serves the instance %s", who, in.Root).
		Advise(AlreadyServing, "pid", strconv.Itoa(pid), "instance", in.Root)
}

// addrInUse reports whether err is a listen's "address already in use".
func addrInUse(err error) bool { return errors.Is(err, syscall.EADDRINUSE) }
