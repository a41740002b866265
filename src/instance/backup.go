package instance

// BackupState is hobbs backup's record for this machine (package backup):
// the repository, the device name, the schedule's interval and the
// outcome of the last backups. It is host-only and left out of snapshots:
// each machine keeps its own.
func (in Instance) BackupState() string { return in.path("backup.json") }

// BackupExcludes are the absolute paths a snapshot of the instance leaves
// out: what is derived and rebuilt on demand (the memory index), the
// locks, and the machine's own backup record.
func (in Instance) BackupExcludes() []string {
	out := []string{in.MemoryIndex(), in.Locks(), in.BackupState()}
	for name := range sharedLocks {
		out = append(out, in.Lock(name))
	}
	return out
}
