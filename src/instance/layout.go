package instance

import (
	"io/fs"
	"path/filepath"
)

// Entry is one path of the instance layout that `hobbs init` creates and
// `hobbs doctor` checks.
type Entry struct {
	Rel      string      // slash-separated, relative to the root
	Dir      bool        // a directory (else a file)
	Mode     fs.FileMode // permission bits it is created with
	Template string      // for files: name under templates/ ("" = empty file)
	Strict   bool        // doctor fails when the mode is looser than Mode
}

// Layout lists every path of a fresh instance, parents before children.
func Layout() []Entry {
	return []Entry{
		{Rel: "foundation.md", Mode: 0o644, Template: "foundation.md"},
		{Rel: "config.yaml", Mode: 0o644, Template: "config.yaml"},
		{Rel: "claude.md", Mode: 0o644, Template: "claude.md"},
		{Rel: "policy.yaml", Mode: 0o644, Template: "policy.yaml"},
		{Rel: "memory", Dir: true, Mode: 0o755},
		{Rel: "memory/active", Dir: true, Mode: 0o755},
		{Rel: "memory/archive", Dir: true, Mode: 0o755},
		{Rel: "playbooks", Dir: true, Mode: 0o755},
		{Rel: "skills", Dir: true, Mode: 0o755},
		{Rel: "agents", Dir: true, Mode: 0o755},
		{Rel: "agents/hobbs", Dir: true, Mode: 0o755},
		{Rel: "agents/hobbs/operational.md", Mode: 0o644, Template: "operational.md"},
		{Rel: "agents/custom", Dir: true, Mode: 0o755},
		{Rel: "vault", Dir: true, Mode: 0o700, Strict: true},
		{Rel: "vault/keys", Dir: true, Mode: 0o700, Strict: true},
		{Rel: "vault/data", Dir: true, Mode: 0o700},
		{Rel: "data", Dir: true, Mode: 0o755},
		{Rel: "logs", Dir: true, Mode: 0o755},
		{Rel: "logs/tasks", Dir: true, Mode: 0o755},
		{Rel: "logs/audit.log", Mode: 0o600, Template: ""},
		{Rel: EgressLogsRel, Dir: true, Mode: 0o755},
		{Rel: "logs/agent", Dir: true, Mode: 0o755},
	}
}

// Share is one entry of the instance that the agent's container mounts.
type Share struct {
	Rel      string // slash-separated, relative to the root
	Dir      bool   // a directory (else a regular file)
	ReadOnly bool   // mounted read-only
}

// AgentShares lists every entry of the instance a session mounts into the
// agent's container, at the same place below ~/.hobbs. Nothing else of the
// instance reaches the agent: not the root (whose entries it could rename
// or plant), not the vault, not logs/audit.log or logs/egress, not .git,
// .gitignore or .locks. The files are read-only, so an injection that
// reaches the agent cannot make itself permanent through them; the
// directories are the agent's to write, and everything in them is
// untrusted input to the host.
func AgentShares() []Share {
	return []Share{
		{Rel: "foundation.md", ReadOnly: true},
		{Rel: "claude.md", ReadOnly: true},
		{Rel: "config.yaml", ReadOnly: true},
		{Rel: "policy.yaml", ReadOnly: true},
		{Rel: "memory", Dir: true},
		{Rel: "playbooks", Dir: true},
		{Rel: "skills", Dir: true},
		{Rel: "agents", Dir: true},
		{Rel: "data", Dir: true},
		{Rel: "logs/tasks", Dir: true},
		{Rel: "logs/agent", Dir: true},
	}
}

// Path returns the absolute path of a layout entry.
func (in Instance) Path(e Entry) string { return filepath.Join(in.Root, filepath.FromSlash(e.Rel)) }
