package provenance

import "github.com/hobbs-agent/hobbs/src/errs"

// The kinds of advice provenance's errors carry; cmd/hobbs words them
// (hints_review.go).
const (
	NoSessionList   errs.Kind = "provenance.no-session-list"
	NoHeldChange    errs.Kind = "provenance.no-held-change"
	NoSessionChange errs.Kind = "provenance.no-session-change"
	LaterChange     errs.Kind = "provenance.later-change"
	CannotRead      errs.Kind = "provenance.cannot-read"
	ListInSession   errs.Kind = "provenance.list-in-session"
	NameTheChanges  errs.Kind = "provenance.name-the-changes"
	// NotText: a held entry Hobbs did not copy (a link, a FIFO, a file
	// over its cap) cannot be approved (facts: id, held).
	NotText errs.Kind = "provenance.not-text"
	// HeldCopyChanged: a held copy no longer hashes to what was held
	// (facts: id).
	HeldCopyChanged errs.Kind = "provenance.held-copy-changed"
)
