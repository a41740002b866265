package config

import "github.com/hobbs-agent/hobbs/src/errs"

// The situation config.yaml's errors advise on; the command layer words it
// (cmd/hobbs/hints_config.go).
const (
	// Invalid: config.yaml does not decode (its errors name file:line).
	Invalid errs.Kind = "config.invalid"
	// UnknownKey: a key config.yaml does not take (facts: key; suggest,
	// the closest known key, or "").
	UnknownKey errs.Kind = "config.unknown-key"
)
