package main

import (
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/provenance"
)

// reviewHints words the advice of package provenance (hobbs review).
var reviewHints = map[errs.Kind]words{
	provenance.NoSessionList:   say("the owner lists them on the host: hobbs review"),
	provenance.NoHeldChange:    say("hobbs review lists what waits"),
	provenance.NoSessionChange: say("hobbs review lists what waits, with its sessions"),
	provenance.LaterChange:     say("hobbs review show {id} shows both changes; review the later one first, or reject this one"),
	provenance.ListInSession:   say("in a session, hobbs review lists them"),
	provenance.NameTheChanges:  say("hobbs review lists them"),
	provenance.CannotRead:      say("restore it from a backup, or move it aside to start a new record (what waits for review is then lost)"),
	provenance.NotText:         say("inspect {held} without following it (ls -l), then hobbs review reject {id}; put a file you want in place yourself"),
	provenance.HeldCopyChanged: say("its copy in the instance's provenance/held/ was changed after it was held; reject it (hobbs review reject {id}) and look at what the session did again"),
}
