package launcher

import (
	"crypto/rand"

	"encoding/hex"
	"fmt"
	"os"

	"strconv"
	"strings"
	"syscall"
)

// NewName returns a fresh session name, hobbs-xxxxxx.
func NewName() string { return "hobbs-" + randHex(3) }

func randHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return hex.EncodeToString(b)
}

// RunVolume is a fresh name for session n's socket volume. It is random:
// `volume create` of a name that exists succeeds and hands over the
// existing volume, which the session would then remove.
func RunVolume(n string) string { return n + "-run-" + randHex(4) }

// Owner identifies the running hobbs process: host/pid/start-time.
func Owner() string {
	host, _ := os.Hostname()
	pid := os.Getpid()
	return fmt.Sprintf("%s/%d/%s", host, pid, startTime(pid))
}

// OwnerAlive reports whether the process named by an owner label still runs.
// Owners on another host are assumed alive (we cannot tell).
func OwnerAlive(owner string) bool {
	parts := strings.SplitN(owner, "/", 3)
	if len(parts) != 3 {
		return false
	}
	host, _ := os.Hostname()
	if parts[0] != host {
		return true
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil || pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && err != syscall.EPERM {
		return false
	}
	return startTime(pid) == parts[2]
}

// startTime returns the process start time from /proc (Linux), or "" where
// there is no /proc: the pid alone then decides.
func startTime(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	f := strings.Fields(s)
	if len(f) < 20 {
		return ""
	}
	return f[19] // field 22 of stat: starttime
}
