package approval

import "github.com/hobbs-agent/hobbs/src/errs"

// The kinds of advice this package's errors carry; cmd/hobbs words them.
const (
	// NotFound: no open question has the id (expired, its session ended,
	// or mistyped).
	NotFound errs.Kind = "approval.not-found"
	// AlreadyAnswered: the question was answered first elsewhere.
	AlreadyAnswered errs.Kind = "approval.already-answered"
	// NotOffered: Always to a tainted session's question.
	NotOffered errs.Kind = "approval.not-offered"
)
