package main

import (
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/launcher"
)

// launcherHints are the words of the launcher's advice: carrying a run
// out, and what it says of sessions.
var launcherHints = map[errs.Kind]words{
	launcher.AWSKeyPair: say("store it again: printf '%s\\n%s\\n' KEY_ID SECRET_KEY | hobbs vault set {vault}"),
	launcher.NoPolicy:   say("the egress proxy needs it: run hobbs init to create it"),
	launcher.BadPolicy:  say("fix {path} (hobbs policy show checks it)"),
	launcher.NameTaken:  say("choose another --name (hobbs ps lists the sessions)"),
	launcher.NoEgressNetwork: say("config.yaml's egress_network names it: create it (docker network create {network}) " +
		"or set egress_network: default"),
	launcher.ProxyFailed:     say("check the policy with hobbs policy show, and the proxy output above"),
	launcher.WorkspaceShared: say("stop that session first (hobbs stop {session}), or use another workspace"),
	launcher.WorkspaceNested: say("stop that session first (hobbs stop {session}), or use a workspace outside it"),
	launcher.EndedAttached:   say("hobbs logs {name} shows its output, hobbs ps what still runs"),
	launcher.AsRoot: say("run Hobbs as an ordinary user allowed to use the engine, e.g.: useradd -m -G docker hobbs; " +
		"then, as that user (su - hobbs): hobbs init && hobbs run (docs/setup.md, \"Running as root\")"),
	launcher.DiskFull: say("free space on that disk (the agent's shares, memory/ or data/, or the workspace may hold what filled it), " +
		"or change resources.min_free_disk in config.yaml"),
}
