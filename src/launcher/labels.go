package launcher

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/image"
	"github.com/hobbs-agent/hobbs/src/instance"
)

// Labels on every object hobbs creates.
const (
	LabelSession  = "dev.hobbs.session"
	LabelRole     = image.LabelRole
	LabelInstance = "dev.hobbs.instance"
	LabelOwner    = "dev.hobbs.owner"
	LabelWork     = "dev.hobbs.workspace"
)

// Roles (values of LabelRole); those of images are package image's.
const (
	RoleAgent   = "agent"
	RoleProxy   = "proxy"
	RoleNetwork = "network"
	RoleRun     = "run" // the session's socket volume
	RoleClaude  = "claude-state"
	RoleSeed    = "seed" // a headless run's reading of the sign-in (Plan.Seed)
)

// Paths inside the image and the containers.
const (
	HomeDir       = "/home/dev"
	WorkspaceDir  = "/home/dev/hobbs/workspace"
	InstanceDir   = "/home/dev/.hobbs"
	ClaudeDir     = "/home/dev/.claude"
	PolicyFile    = "/etc/hobbs/policy.yaml"
	ProxyPort     = "3128"
	RunDir        = "/run/hobbs"             // the socket volume, in both containers
	ProxySocket   = RunDir + "/proxy.sock"   // where the proxy listens
	RelayAddr     = "127.0.0.1:" + ProxyPort // the agent's relay to it (HTTP_PROXY)
	TokenUser     = "hobbs"
	ProxyAuditRel = "logs/egress/audit.log" // the proxy's audit log, in the instance
)

var nameRe = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,39}$`)

// ValidName checks a session name: it becomes container and network names.
func ValidName(n string) error {
	if !nameRe.MatchString(n) || strings.HasSuffix(n, "-proxy") {
		return errs.Usagef("invalid session name %q", n).
			WithHint("use 1-40 of a-z 0-9 . _ - starting with a letter or digit (not ending in -proxy)")
	}
	return nil
}

// NewName returns a fresh session name, hobbs-xxxxxx.
func NewName() string { return "hobbs-" + randHex(3) }

func randHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return hex.EncodeToString(b)
}

// InstanceID is the short hash of an instance's path used in labels and in
// the default Claude state volume name.
func InstanceID(in instance.Instance) string {
	h := sha256.Sum256([]byte(in.Root))
	return hex.EncodeToString(h[:6])
}

// ClaudeVolume is the Claude state volume of in: configured, or
// hobbs-claude-<instance id>.
func ClaudeVolume(in instance.Instance, configured string) string {
	if configured != "" {
		return configured
	}
	return "hobbs-claude-" + InstanceID(in)
}

// Object names of session n.
func ProxyName(n string) string { return n + "-proxy" }

// RunVolume is a fresh name for session n's socket volume. It is random:
// `volume create` of a name that exists succeeds and hands over the
// existing volume, which the session would then remove.
func RunVolume(n string) string { return n + "-run-" + randHex(4) }

func EgressNetwork(n string) string { return n + "-egress" }

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
