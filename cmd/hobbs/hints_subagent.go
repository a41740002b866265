package main

import (
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/subagent"
)

// subagentHints are the words of the sub-agents' advice
// (src/subagent/kinds.go).
var subagentHints = map[errs.Kind]words{
	subagent.HookInput:  say("hobbs agent context - reads what Claude Code gives a SubagentStart hook on standard input"),
	subagent.BadName:    say("use lower-case letters, digits and single hyphens, starting with a letter (at most 64)"),
	subagent.Unreadable: say("fix the file by hand; Hobbs never rewrites a file it cannot parse"),
	subagent.NoAgent:    say("known agents: {known} (hobbs agent list)"),
	subagent.NameTaken:  say("choose another name"),
	subagent.NoTags:     say("pass --tag T (repeatable)"),
	subagent.BadTag:     say("tags are lower-case words: letters, digits, '-', '_'"),
	subagent.Exists:     say("edit the file, or choose another name"),
	subagent.EmptyLearn: say("pass the lesson as an argument, or - to read it from stdin"),
}
