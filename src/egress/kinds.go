package egress

import "github.com/hobbs-agent/hobbs/src/errs"

// The kinds of advice this package's errors carry; cmd/hobbs words them.
const (
	// NoImagePolicy: no --policy was given and the image's policy file is
	// not there.
	NoImagePolicy errs.Kind = "egress.no-image-policy"
)
