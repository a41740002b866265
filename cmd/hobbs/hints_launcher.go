package main

import (
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/launcher"
)

// launcherHints are the words of the launcher's advice: carrying a run
// out, and what it says of sessions.
var launcherHints = map[errs.Kind]words{
	launcher.AWSKeyPair: say("store it again: printf '%s\\n%s\\n' KEY_ID SECRET_KEY | hobbs vault set {vault}"),
}
