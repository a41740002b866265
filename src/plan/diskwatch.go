package plan

import (
	"path/filepath"

	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/instance"
)

// A full disk is not the agent's to cause. The agent's shares and its
// workspace are host directories with no quota: an agent that writes
// without end fills the filesystem that holds them, and with it the
// user's. While a run is live the launcher watches the free space of the
// filesystems its plan's DiskWatch names and stops the run, as hobbs stop
// does, once any has less than resources.min_free_disk.

// DiskWatch is the free space a run keeps on the host.
type DiskWatch struct {
	// MinFree is resources.min_free_disk in bytes; 0: no watch.
	MinFree int64 `json:"min_free_bytes"`
	// Paths are the host directories the agent writes: the workspace and
	// the instance's writable shares.
	Paths []string `json:"paths"`
}

// diskWatch is the DiskWatch of a plan: the workspace and every writable
// share the host has.
func diskWatch(cfg *config.Config, in instance.Instance, h Host) DiskWatch {
	w := DiskWatch{MinFree: cfg.Resources.MinFreeDiskBytes(), Paths: []string{}}
	if w.MinFree <= 0 {
		w.MinFree = 0
		return w
	}
	if h.Workspace != "" {
		w.Paths = append(w.Paths, h.Workspace)
	}
	for _, sh := range h.Shares {
		if sh.Dir && !sh.ReadOnly {
			w.Paths = append(w.Paths, filepath.Join(in.Root, filepath.FromSlash(sh.Rel)))
		}
	}
	return w
}
