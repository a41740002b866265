package config

import (
	"time"
)

// Egress configures the egress proxy beyond the network it joins.
type Egress struct {
	// Hold is how long a request to a host outside the policy waits for the
	// owner's answer (docs/egress.md, "Held requests"): a duration such as
	// "90s"; "0s" refuses it at once.
	Hold string `yaml:"hold" json:"hold"`
}

// MaxHold bounds egress.hold: a held request keeps a client (and a
// question) waiting no longer.
const MaxHold = 10 * time.Minute

// HoldDuration is egress.hold as a duration (0: no holding); a value
// Validate refuses counts as 0.
func (e Egress) HoldDuration() time.Duration {
	if e.Hold == "" {
		return 0
	}
	d, err := time.ParseDuration(e.Hold)
	if err != nil || d < 0 || d > MaxHold {
		return 0
	}
	return d
}

func (c *Config) validateEgress(bad func(keys []string, format string, args ...any)) {
	if c.Egress.Hold == "" {
		return
	}
	d, err := time.ParseDuration(c.Egress.Hold)
	switch {
	case err != nil:
		bad([]string{"egress", "hold"}, "%q is not a duration like 90s or 2m (0s: refuse at once)", c.Egress.Hold)
	case d < 0 || d > MaxHold:
		bad([]string{"egress", "hold"}, "%q is out of range: 0s to %v", c.Egress.Hold, MaxHold)
	}
}
