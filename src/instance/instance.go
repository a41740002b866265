// Package instance owns the layout of a Hobbs instance directory: the user's
// private data (foundation, config, memory, playbooks, vault, logs). Every path
// inside an instance is spelled here and nowhere else; other packages ask an
// Instance for the path they need, and open it through Instance.FS.
//
// The instance root is the host's: no session mounts it. The agent's
// container gets only the entries AgentShares lists (content it works on,
// and read-only copies of what it must read); the vault, the host's audit
// log, the proxy's audit log, the grants, the quarantine, the provenance
// record, the owner's conversations (chat/), .git, .gitignore
// and the locks of host-only resources stay where no agent mount reaches.
//
// The instance lives at $XDG_DATA_HOME/hobbs on the host (adrg/xdg decides the
// default per platform) and at ~/.hobbs inside the agent container. HOBBS_HOME
// or the --instance flag override it.
package instance

import (
	"os"
	"path/filepath"

	"github.com/adrg/xdg"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// EnvHome is the environment variable that overrides the instance directory.
const EnvHome = "HOBBS_HOME"

// Instance is a Hobbs instance directory. The zero value is not usable; build
// one with At or Resolve.
type Instance struct {
	Root string // absolute path
}

// At returns the instance rooted at dir (made absolute).
func At(dir string) (Instance, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Instance{}, errs.Wrap(errs.Usage, err, "instance directory %q", dir)
	}
	return Instance{Root: abs}, nil
}

// Resolve picks the instance directory: flag (from --instance) if set, else
// $HOBBS_HOME, else $XDG_DATA_HOME/hobbs. It does not require the directory to
// exist.
func Resolve(flag string) (Instance, error) {
	switch {
	case flag != "":
		return At(flag)
	case os.Getenv(EnvHome) != "":
		return At(os.Getenv(EnvHome))
	default:
		xdg.Reload() // honour XDG_* changes made after process start (tests)
		return At(filepath.Join(xdg.DataHome, "hobbs"))
	}
}

func (in Instance) path(rel ...string) string {
	return filepath.Join(append([]string{in.Root}, rel...)...)
}

// Grants is the host-only directory of the run: blocks the user approved
// (package playbook): the agent can edit a playbook, not what its headless
// runs are granted.
func (in Instance) Grants() string { return in.path("grants") }

// Top-level files.
func (in Instance) Foundation() string { return in.path("foundation.md") }
func (in Instance) Config() string     { return in.path("config.yaml") }
func (in Instance) ClaudeMD() string   { return in.path("claude.md") }
func (in Instance) Policy() string     { return in.path("policy.yaml") }
func (in Instance) GitIgnore() string  { return in.path(".gitignore") }

// Memory.
func (in Instance) MemoryDir() string     { return in.path("memory") }
func (in Instance) MemoryActive() string  { return in.path("memory", "active") }
func (in Instance) MemoryArchive() string { return in.path("memory", "archive") }
func (in Instance) MemoryHistory() string { return in.path("memory", "history.jsonl") }

// MemoryIndex is the directory for derived, rebuildable memory indexes. It is
// safe to delete.
func (in Instance) MemoryIndex() string { return in.path("memory", ".index") }

// Playbooks, skills, agents.
func (in Instance) Playbooks() string           { return in.path("playbooks") }
func (in Instance) Playbook(name string) string { return in.path("playbooks", name+".md") }
func (in Instance) Skills() string              { return in.path("skills") }
func (in Instance) Agents() string              { return in.path("agents") }
func (in Instance) AgentsCustom() string        { return in.path("agents", "custom") }
func (in Instance) AgentDir(name string) string { return in.path("agents", name) }
func (in Instance) Operational(agent string) string {
	return in.path("agents", agent, "operational.md")
}

// Vault.
func (in Instance) Vault() string                 { return in.path("vault") }
func (in Instance) VaultKeys() string             { return in.path("vault", "keys") }
func (in Instance) VaultIdentity() string         { return in.path("vault", "keys", "identity.txt") }
func (in Instance) VaultRecipients() string       { return in.path("vault", "keys", "recipients.txt") }
func (in Instance) VaultData() string             { return in.path("vault", "data") }
func (in Instance) VaultEntry(name string) string { return in.path("vault", "data", name+".age") }

// Vault rotation and removal (see package vault): the new identity while a
// rotation re-encrypts, the old one until every entry dropped it, retired
// identities, and entries removed without --purge.
func (in Instance) VaultIdentityNext() string { return in.path("vault", "keys", "identity.next.txt") }
func (in Instance) VaultIdentityPrev() string { return in.path("vault", "keys", "identity.prev.txt") }
func (in Instance) VaultRetired() string      { return in.path("vault", "keys", "retired") }
func (in Instance) VaultRemoved() string      { return in.path("vault", "removed") }

// Data and logs.
func (in Instance) Data() string  { return in.path("data") }
func (in Instance) Logs() string  { return in.path("logs") }
func (in Instance) Tasks() string { return in.path("logs", "tasks") }

// AuditLog is the audit log this process writes: the host's logs/audit.log,
// which no session mounts, or inside a session the agent's own
// (AgentAuditLog).
func (in Instance) AuditLog() string {
	if InContainer() {
		return in.AgentAuditLog()
	}
	return in.path("logs", "audit.log")
}

// InContainer reports whether this process runs in the agent's container
// (HOBBS_CONTEXT=container, set by the image and the launcher). There the
// audit log is the agent's own (AgentAuditLog): the host's is never mounted.
func InContainer() bool { return os.Getenv("HOBBS_CONTEXT") == "container" }

// EgressLogs is the directory of the egress proxy's audit log, which only
// the proxy writes: no session mounts it (nor logs/, nor the root) into the
// agent's container, so an agent cannot rewrite the record of where it
// connected. EgressLogsRel and EgressAuditLogRel are their paths relative
// to the root, slash-separated: where the proxy's container, which mounts
// the instance at another place, finds them.
func (in Instance) EgressLogs() string     { return in.path(filepath.FromSlash(EgressLogsRel)) }
func (in Instance) EgressAuditLog() string { return in.path(filepath.FromSlash(EgressAuditLogRel)) }

const (
	EgressLogsRel     = "logs/egress"
	EgressAuditLogRel = EgressLogsRel + "/audit.log"
)

// Approvals is the directory of held requests' questions and answers
// (package approval): beside the proxy's audit log, written by the
// session's proxy (questions) and the host (answers), never mounted into
// the agent's container. ApprovalsRel is its path relative to the root.
func (in Instance) Approvals() string { return in.path(filepath.FromSlash(ApprovalsRel)) }

// ApprovalsRel is Approvals relative to the root, slash-separated.
const ApprovalsRel = EgressLogsRel + "/approvals"

// AgentLogs is the directory of the toolkit's audit log inside a session:
// the agent's container writes it, so the host treats it as the agent's own
// account, never as a record of its own.
func (in Instance) AgentLogs() string     { return in.path("logs", "agent") }
func (in Instance) AgentAuditLog() string { return in.path("logs", "agent", "audit.log") }

// Chats is the directory of the owner's conversations with Hobbs from a
// channel (src/chat): host-only, like grants/; no session mounts it.
func (in Instance) Chats() string { return in.path("chat") }

// Serve is hobbs serve's host-only state: its run queue, the events
// waiting in it and the webhook deliveries seen (replay). No session mounts
// it.
func (in Instance) Serve() string { return in.path("serve") }

// Locks is the directory holding the locks of host-only resources (created
// on demand). No session mounts it.
func (in Instance) Locks() string { return in.path(".locks") }

// sharedLocks are the resources both the host and the agent's container
// write: their locks live in the resource's own directory, which both see.
var sharedLocks = map[string][]string{
	"memory":    {"memory"},
	"playbooks": {"playbooks"},
	"agents":    {"agents"},
	"tasks":     {"logs", "tasks"},
}

// Lock returns the lock file path for a named resource ("memory", "vault"…).
// A resource the agent writes too has its lock in its own directory (the
// agent can hold it; the host's waits for it time out with a message); a
// host-only resource (vault, policy, config, sessions) has its lock in
// .locks, which the agent never sees, so it cannot block the host there.
func (in Instance) Lock(name string) string {
	if dir, ok := sharedLocks[name]; ok {
		return in.path(append(dir, ".lock")...)
	}
	return in.path(".locks", name+".lock")
}

// ShareLock returns the lock file path of the share rel ("playbooks",
// "logs/tasks") when it has a lock of its own, which every writer of
// the share takes before it re-reads and writes.
func (in Instance) ShareLock(rel string) (string, bool) {
	for name, dir := range sharedLocks {
		if filepath.ToSlash(filepath.Join(dir...)) == rel {
			return in.Lock(name), true
		}
	}
	return "", false
}

// FS is the safe-open layer for this instance: every host-side open, read,
// write, lock and listing of an instance path goes through it (package
// safefile: no link followed below the root, no FIFO or device opened).
func (in Instance) FS() safefile.Root { return safefile.Beneath(in.Root) }

// Exists reports whether the instance has been initialised (config.yaml or
// foundation.md present).
func (in Instance) Exists() bool {
	for _, p := range []string{in.Config(), in.Foundation()} {
		if _, err := in.FS().Lstat(p); err == nil {
			return true
		}
	}
	return false
}

// Rel returns p relative to the instance root, for messages.
func (in Instance) Rel(p string) string {
	if r, err := filepath.Rel(in.Root, p); err == nil {
		return r
	}
	return p
}
