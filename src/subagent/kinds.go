package subagent

import "github.com/hobbs-agent/hobbs/src/errs"

// The situations the sub-agents' errors advise on; the command layer words
// them (cmd/hobbs/hints_subagent.go).
const (
	HookInput  errs.Kind = "subagent.hook-input" // agent context - given input that is not a hook's
	BadName    errs.Kind = "subagent.bad-name"   // an agent name outside the rule
	Unreadable errs.Kind = "subagent.unreadable" // a definition that does not parse
	// NoAgent: no agent of that name; fact known, the agents there are
	// (joined by ", ").
	NoAgent    errs.Kind = "subagent.no-agent"
	NameTaken  errs.Kind = "subagent.name-taken"  // the top-level or a framework agent's name
	NoTags     errs.Kind = "subagent.no-tags"     // an agent without memory tags
	BadTag     errs.Kind = "subagent.bad-tag"     // a tag outside the rule
	Exists     errs.Kind = "subagent.exists"      // a custom agent of that name exists
	EmptyLearn errs.Kind = "subagent.empty-learn" // agent learn without a lesson
)
