package main

import (
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/launcher"
)

// psHints are the words of the advice about an instance's sessions (hobbs
// ps, logs, attach, exec, stop).
var psHints = map[errs.Kind]words{
	launcher.NoRunningSession: say("list them with: hobbs ps"),
}
