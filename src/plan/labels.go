package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
)

// Labels on every object hobbs creates.
const (
	LabelSession  = "dev.hobbs.session"
	LabelRole     = "dev.hobbs.role"
	LabelInstance = "dev.hobbs.instance"
	LabelOwner    = "dev.hobbs.owner"
	LabelWork     = "dev.hobbs.workspace"
)

// Roles (values of LabelRole) of a session's objects; those of images are
// package image's.
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
	HomeDir      = "/home/dev"
	WorkspaceDir = "/home/dev/hobbs/workspace"
	InstanceDir  = "/home/dev/.hobbs"
	ClaudeDir    = "/home/dev/.claude"
	PolicyFile   = "/etc/hobbs/policy.yaml"
	ProxyPort    = "3128"
	RunDir       = "/run/hobbs"             // the socket volume, in both containers
	ProxySocket  = RunDir + "/proxy.sock"   // where the proxy listens
	RelayAddr    = "127.0.0.1:" + ProxyPort // the agent's relay to it (HTTP_PROXY)
	TokenUser    = "hobbs"
)

var nameRe = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,39}$`)

// ValidName checks a session name: it becomes container and network names.
func ValidName(n string) error {
	if !nameRe.MatchString(n) || strings.HasSuffix(n, "-proxy") {
		return errs.Usagef("invalid session name %q", n).Advise(InvalidName)
	}
	return nil
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

// ProxyName is the name of session n's proxy container.
func ProxyName(n string) string { return n + "-proxy" }

// EgressNetwork is the name of session n's own egress network
// (egress_network: session).
func EgressNetwork(n string) string { return n + "-egress" }

// Labels are the labels of session name's object of role, as key=value:
// the session, the role, the instance (its InstanceID) and the owner (the
// launcher's process: Owner); the agent's also name its workspace. Every
// object of a run is labelled by this one function.
func Labels(name, instanceID, owner, role, workspace string) []string {
	l := []string{LabelSession + "=" + name, LabelRole + "=" + role, LabelInstance + "=" + instanceID, LabelOwner + "=" + owner}
	if role == RoleAgent {
		l = append(l, LabelWork+"="+workspace)
	}
	return l
}

// StateLabels are the labels of instance instanceID's Claude state volume,
// which outlives every session: no session, no owner.
func StateLabels(instanceID string) []string {
	return []string{LabelRole + "=" + RoleClaude, LabelInstance + "=" + instanceID}
}
