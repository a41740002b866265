// Package layer gives each session a private layer over a share and
// merges a layer's changes three-way into what is in effect.
//
// A Layer (layer.go) is one share's layer for one session: a snapshot of
// the share as the session started from it (lower, hard links to the files
// in effect, which the host replaces only by atomic rename, so the snapshot
// keeps the content it linked) and the session's changes (upper). With
// Overlay the engine mounts an overlay filesystem of the two, so the upper
// directory is exactly the session's change set; with Copy (where no
// overlay can be mounted) the agent writes a copy and the changes are what
// differs from the snapshot. Nothing outside the layer sees its changes
// until the host merges them.
//
// The merge is independent of layers, for any three trees of files:
//
//	Merge3(base, ours, theirs Version, by Merger) (Version, bool)
//	    one path: a side equal to base yields to the other; the same
//	    change on both sides is taken once; anything else is by's to merge
//	    (Text when nil); ok false is a conflict.
//	Trees(paths []string, base, ours, theirs Tree, by func(path) Merger) []Outcome
//	    each of paths (those theirs changed from base), sorted; an Outcome
//	    says the version to put in effect (Result, when Changed) or that it
//	    conflicts (ours stays in effect, theirs goes to review).
//	Lines(base, ours, theirs []byte) ([]byte, bool)
//	    line-wise diff3; appends to a shared prefix on both sides (logs)
//	    keep both.
//	Tree: Get(path) (Version, error); DirTree reads a directory through
//	    src/safefile (never following a link).
//
// base is what the changed side started from, ours what is in effect now,
// theirs the changed side: for a session's end, the layer's lower, the
// share and the layer's upper (Layer.Base, DirTree of the share,
// Layer.Theirs); for a second device, its last synced state, this device,
// and the device's snapshot. The caller applies the outcomes (under its
// locks) and sends conflicts to review; a Merger that knows a format
// (src/memory merges memories by meaning) plugs in per path.
package layer
