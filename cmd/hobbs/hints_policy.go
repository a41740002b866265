package main

import (
	"github.com/hobbs-agent/hobbs/src/egress"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/policy"
)

// policyHints words the advice of the policy model (src/policy) and of the
// proxy daemon (src/egress).
var policyHints = map[errs.Kind]words{
	policy.DenyWins:      say("remove it from deny in {path} first"),
	policy.NotListed:     say("see what allows it: hobbs policy check {pattern}"),
	egress.NoImagePolicy: say("pass --policy FILE (see 'hobbs policy show' for the format)"),
}
