package main

import (
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
)

// instanceHints are the words of init's advice (src/instance/kinds.go).
var instanceHints = map[errs.Kind]words{
	instance.ForeignGit: say("git runs commands a repository's config names (core.fsmonitor, hooks), and an agent could have " +
		"planted this one: inspect it with git -C {root} config -l --show-origin (and its hooks/), remove it, then run " +
		"hobbs init --git again; if it is yours (an older hobbs init --git made it) and you checked it, record that " +
		"with: touch {marker}"),
	instance.NoGit:          say("install git, or run hobbs init without --git"),
	instance.NoFoundation:   say("run: hobbs init"),
	instance.FoundationKept: say("answer y to rerun the questions over it (the current text is kept in foundation.md.TIME.bak), or edit {path}"),
}
