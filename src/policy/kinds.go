package policy

import "github.com/hobbs-agent/hobbs/src/errs"

// The kinds of advice this package's errors carry; cmd/hobbs words them.
const (
	// DenyWins: an entry to allow is listed under deny, which wins.
	// Facts: path (the policy file).
	DenyWins errs.Kind = "policy.deny-wins"
	// NotListed: an entry to remove is not in the policy file. Facts:
	// pattern (the entry, canonical).
	NotListed errs.Kind = "policy.not-listed"
)
