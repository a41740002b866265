package instance

import "github.com/hobbs-agent/hobbs/src/errs"

// The situations init's errors advise on; the command layer words them
// (cmd/hobbs/hints_instance.go).
const (
	// ForeignGit: a .git init --git did not make; facts root (the
	// instance) and marker (the file that records init made it).
	ForeignGit errs.Kind = "instance.foreign-git"
	// NoGit: init --git without git installed.
	NoGit errs.Kind = "instance.no-git"
	// NoFoundation: foundation.md is missing.
	NoFoundation errs.Kind = "instance.no-foundation"
	// FoundationKept: the owner's foundation.md not redone without a yes;
	// fact path.
	FoundationKept errs.Kind = "instance.foundation-kept"
)
