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
		{Rel: "logs/egress", Dir: true, Mode: 0o755},
	}
}

// Path returns the absolute path of a layout entry.
func (in Instance) Path(e Entry) string { return filepath.Join(in.Root, filepath.FromSlash(e.Rel)) }
