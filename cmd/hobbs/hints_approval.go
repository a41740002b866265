package main

import (
	"github.com/hobbs-agent/hobbs/src/approval"
	"github.com/hobbs-agent/hobbs/src/errs"
)

// approvalHints words the advice of package approval (hobbs approvals).
var approvalHints = map[errs.Kind]words{
	approval.NotFound:        say("hobbs approvals lists the questions still waiting"),
	approval.AlreadyAnswered: say("the first answer stands ({answer}, on the {via}); the request went its way"),
	approval.NotOffered:      say("allow it once or for the session: hobbs approvals allow ID --session"),
}
