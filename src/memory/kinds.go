package memory

import "github.com/hobbs-agent/hobbs/src/errs"

// The kinds of advice memory's errors and results carry; cmd/hobbs words
// them (hints_memory.go). Facts: id (a memory's id), newer (the memory that
// superseded one).
const (
	Locked           errs.Kind = "memory.locked"
	Unparsable       errs.Kind = "memory.unparsable"
	NoMemory         errs.Kind = "memory.no-memory"
	BadID            errs.Kind = "memory.bad-id"
	BadIDAll         errs.Kind = "memory.bad-id-all"
	NameClash        errs.Kind = "memory.name-clash"
	EmptyText        errs.Kind = "memory.empty-text"
	BadType          errs.Kind = "memory.bad-type"
	BadTag           errs.Kind = "memory.bad-tag"
	SupersedeNewest  errs.Kind = "memory.supersede-newest"
	ReinforceNewer   errs.Kind = "memory.reinforce-newer"
	UseNewer         errs.Kind = "memory.use-newer"
	HasCandidates    errs.Kind = "memory.has-candidates"
	BadRegexp        errs.Kind = "memory.bad-regexp"
	BadFormat        errs.Kind = "memory.bad-format"
	BadStatus        errs.Kind = "memory.bad-status"
	NoAgent          errs.Kind = "memory.no-agent"
	NothingToRecall  errs.Kind = "memory.nothing-to-recall"
	LooksLikeSecret  errs.Kind = "memory.looks-like-secret"
	ForgetUnreadable errs.Kind = "memory.forget-unreadable"
	NoMemoryToForget errs.Kind = "memory.no-memory-to-forget"
	// FilesToFix is hobbs memory lint's advice when Lint finds problems.
	FilesToFix errs.Kind = "memory.files-to-fix"
)

// The kinds of advice memory's doctor checks give; cmd/hobbs words them
// (hints_doctor.go). Facts: path (foundation.md, the memory directory),
// chars (the length to shorten to), limit (the hook's limit).
const (
	FoundationOverHook   errs.Kind = "memory.foundation-over-hook"
	FoundationOverBudget errs.Kind = "memory.foundation-over-budget"
	DirUnreadable        errs.Kind = "memory.dir-unreadable"
	UnusableFiles        errs.Kind = "memory.unusable-files"
)
