package egress

import "github.com/hobbs-agent/hobbs/src/errs"

// The kinds of advice this package's errors carry; cmd/hobbs words them.
const (
	// NoImagePolicy: no --policy was given and the image's policy file is
	// not there.
	NoImagePolicy errs.Kind = "egress.no-image-policy"
)

// PolicyInvalid is the advice of doctor's policy check for a policy.yaml
// that does not parse; cmd/hobbs words it (hints_doctor.go).
const PolicyInvalid errs.Kind = "egress.policy-invalid"
