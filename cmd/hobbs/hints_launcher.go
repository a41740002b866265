package main

import (
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/launcher"
)

// launcherHints are the words of the launcher's advice and notices:
// carrying a run out, and what it says of sessions.
var launcherHints = map[errs.Kind]words{
	launcher.AWSKeyPair:    say("store it again: printf '%s\\n%s\\n' KEY_ID SECRET_KEY | hobbs vault set {vault}"),
	launcher.NoPolicy:      say("the egress proxy needs it: run hobbs init to create it"),
	launcher.BadPolicy:     say("fix {path} (hobbs policy show checks it)"),
	launcher.NameTaken:     say("choose another --name (hobbs ps lists the sessions)"),
	launcher.CopyLayers:    say("docs/memory.md (Layers) says what copies cost; with Docker Engine on Linux sessions get overlays"),
	launcher.OldKernelOver: say("upgrade the kernel to 5.11 or later, or set HOBBS_LAYERS=copy (copies: docs/memory.md, Layers)"),
	launcher.DesktopLayers: say("if a session fails to mount its layers, set HOBBS_LAYERS=copy (docs/memory.md, Layers)"),
	launcher.NoEgressNetwork: say("config.yaml's egress_network names it: create it (docker network create {network}) " +
		"or set egress_network: default"),
	launcher.ProxyFailed:     say("check the policy with hobbs policy show, and the proxy output above"),
	launcher.WorkspaceShared: say("stop that session first (hobbs stop {session}), or use another workspace"),
	launcher.WorkspaceNested: say("stop that session first (hobbs stop {session}), or use a workspace outside it"),
	launcher.EndedAttached:   say("hobbs logs {name} shows its output, hobbs ps what still runs"),
	launcher.AttachNeedsTerminal: say("attach from a terminal; without one, hobbs logs {name} shows its output and " +
		"hobbs exec {name} -- CMD runs a command in it"),
	launcher.AsRoot: say("run Hobbs as an ordinary user allowed to use the engine, e.g.: useradd -m -G docker hobbs; " +
		"then, as that user (su - hobbs): hobbs init && hobbs run (docs/setup.md, \"Running as root\")"),
	launcher.Attached: say("attached to session {name}: Ctrl-P Ctrl-Q detaches and the session goes on (hobbs attach {name} comes back)"),
	launcher.NotSignedIn: say("Claude Code is not signed in on this instance yet: type /login at its prompt, open the URL it prints " +
		"in a browser on your machine and paste the code back (docs/setup.md, \"First login\"); the sign-in is kept for later sessions"),
	launcher.Detached: say("detached from session {name}, which goes on: hobbs attach {name}, hobbs logs {name}, hobbs stop {name}"),
	launcher.Started: say("session {name} runs: hobbs attach {name} (Ctrl-P Ctrl-Q leaves it), hobbs exec {name} -- CMD, " +
		"hobbs logs {name}, hobbs stop {name}"),
	launcher.MovedOut: say("moved {from} out of the shares to {to}: host tools (git, direnv, editors) act on what it holds; " +
		"inspect it there (hobbs doctor lists it)"),
	launcher.SharesUnchecked: say("the shares were not all checked for what host tools act on ({err}); hobbs doctor names what is there"),
	launcher.ChangesHeld:     say("session {session} {why}: {held} of its changes wait for your review (hobbs review)"),
	launcher.ChangesWaiting:  say("{waiting} changes wait for your review (hobbs review)"),
	launcher.DiskFull: say("free space on that disk (the agent's shares, memory/ or data/, or the workspace may hold what filled it), " +
		"or change resources.min_free_disk in config.yaml"),
}
