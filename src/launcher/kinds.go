package launcher

import "github.com/hobbs-agent/hobbs/src/errs"

// The kinds of advice the launcher's errors carry (worded in cmd/hobbs).
const (
	AWSKeyPair      errs.Kind = "launcher.aws-key-pair"      // an aws-sigv4 vault entry that is not a key pair: {vault}
	NoPolicy        errs.Kind = "launcher.no-policy"         // the instance has no policy.yaml
	BadPolicy       errs.Kind = "launcher.bad-policy"        // policy.yaml the proxy would refuse: {path}
	NameTaken       errs.Kind = "launcher.name-taken"        // a container of the session's name exists
	NoEgressNetwork errs.Kind = "launcher.no-egress-network" // egress_network names a network that does not exist: {network}
	ProxyFailed     errs.Kind = "launcher.proxy-failed"      // the proxy did not come up, or died
	WorkspaceShared errs.Kind = "launcher.workspace-shared"  // a live session shares the workspace, its .git writable: {session}
	WorkspaceNested errs.Kind = "launcher.workspace-nested"  // a live session's workspace is inside or around this one: {session}
	EndedAttached   errs.Kind = "launcher.ended-attached"    // the session ended while attached: {name}
	// AttachNeedsTerminal: hobbs attach without a terminal to a session
	// that has one: {name}.
	AttachNeedsTerminal errs.Kind = "launcher.attach-needs-terminal"
	AsRoot              errs.Kind = "launcher.as-root"   // hobbs run as root
	DiskFull            errs.Kind = "launcher.disk-full" // the disk watch stopped the run
)

// The kinds of the launcher's notices: status lines as data, worded in
// cmd/hobbs as advice is (Runtime.Words, Terminal.Words).
const (
	Attached        errs.Kind = "launcher.attached"         // attached to session {name}: how to detach and come back
	Detached        errs.Kind = "launcher.detached"         // detached from session {name}, which goes on
	Started         errs.Kind = "launcher.started"          // session {name} runs in the background
	MovedOut        errs.Kind = "launcher.moved-out"        // {from} moved out of the shares to {to}
	SharesUnchecked errs.Kind = "launcher.shares-unchecked" // the shares were not all checked: {err}
	ChangesHeld     errs.Kind = "launcher.changes-held"     // session {session} ({why}): {held} changes wait for review
	ChangesWaiting  errs.Kind = "launcher.changes-waiting"  // {waiting} changes wait for review
)

// word is words's wording of the notice k with facts kv, "" without
// words (the caller then says nothing).
func word(words func(errs.Advice) string, k errs.Kind, kv ...string) string {
	if words == nil {
		return ""
	}
	return words(errs.NewAdvice(k, kv...))
}

// The kinds of advice the launcher's doctor checks give; cmd/hobbs words
// them (hints_doctor.go). Facts: bin (the engine's CLI), ref and image (an
// image), default (image.DefaultBase), where (a containers.conf).
const (
	PodmanOld       errs.Kind = "launcher.podman-old"
	DockerOld       errs.Kind = "launcher.docker-old"
	ImageNotPulled  errs.Kind = "launcher.image-not-pulled"
	ClaudeUnchecked errs.Kind = "launcher.claude-unchecked"
	NoCatatonit     errs.Kind = "launcher.no-catatonit"
	BadInitPath     errs.Kind = "launcher.bad-init-path"
)

// NoRunningSession advises listing the sessions: the one named is not
// running.
const NoRunningSession errs.Kind = "launcher.no-running-session"
