package launcher

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/adrg/xdg"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/plan"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// Session records. A launcher notes each session it starts in the host's
// state directory ($XDG_STATE_HOME/hobbs/sessions/<instance id>/<name>,
// holding the owner) before it creates anything, and removes the note once
// its cleanup succeeded. Leftovers of a session can only exist where its
// note survived (the launcher was killed, or its cleanup failed), so a run
// that finds no other note skips the engine calls that look for leftovers
// — three CLI calls that competed with the start-up for the CPU. The notes
// live on the host, not in the instance: the agent, which can write the
// instance, cannot hide its session's leftovers from the next run.
// `hobbs stop --all` and `hobbs ps` always ask the engine.

// recordDir is where the notes of instance in's sessions are kept.
func recordDir(in instance.Instance) string {
	return filepath.Join(xdg.StateHome, "hobbs", "sessions", plan.InstanceID(in))
}

// record notes session name of in, owned by owner. A note of the same name
// whose launcher still runs is left alone (that run holds the name; this
// one will meet the name clash): recorded is then false.
func record(in instance.Instance, name, owner string) (recorded bool, err error) {
	dir := recordDir(in)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, err
	}
	if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
		if o := strings.TrimSpace(string(b)); o != owner && OwnerAlive(o) {
			return false, nil
		}
	}
	if err := safefile.Write(filepath.Join(dir, name), []byte(owner+"\n"), 0o600); err != nil {
		return false, err
	}
	return true, nil
}

// unrecord removes the note of session name.
func unrecord(in instance.Instance, name string) {
	_ = os.Remove(filepath.Join(recordDir(in), name))
}

// otherRecords lists the notes of in's sessions other than self: whether
// there is any (true when the notes cannot be read: then the engine is
// asked), and those whose launcher is gone.
func otherRecords(in instance.Instance, self string) (others bool, dead []string) {
	entries, err := os.ReadDir(recordDir(in))
	if err != nil {
		return !os.IsNotExist(err), nil
	}
	for _, e := range entries {
		n := e.Name()
		if n == self || strings.HasPrefix(n, ".") {
			continue
		}
		others = true
		b, err := os.ReadFile(filepath.Join(recordDir(in), n))
		if err == nil && !OwnerAlive(strings.TrimSpace(string(b))) {
			dead = append(dead, n)
		}
	}
	return others, dead
}

// noteOf reports whether session name of in is noted, and whether the
// launcher noted still runs.
func noteOf(in instance.Instance, name string) (noted, alive bool) {
	b, err := os.ReadFile(filepath.Join(recordDir(in), name))
	if err != nil {
		return false, false
	}
	return true, OwnerAlive(strings.TrimSpace(string(b)))
}

// notedBy reports whether session name of in is noted as owner's.
func notedBy(in instance.Instance, name, owner string) bool {
	b, err := os.ReadFile(filepath.Join(recordDir(in), name))
	return err == nil && strings.TrimSpace(string(b)) == owner
}

// forgetDead removes the notes of sessions whose launcher is gone (after
// their leftovers were removed); notes of running launchers stay.
func forgetDead(in instance.Instance, names []string) {
	for _, n := range names {
		if _, alive := noteOf(in, n); !alive {
			unrecord(in, n)
		}
	}
}

// Stop marks. `hobbs stop` notes, before it removes anything, that it is
// stopping a session whose launcher still runs: a file .stop.<name> among
// the notes, holding that launcher's owner. The launcher, seeing its
// containers die, reads it and reports that the session was stopped
// (ExitStopped) rather than that its proxy or agent failed. The owner in
// the mark keeps an earlier stop from speaking for a later session of the
// same name. A stop run with another state directory leaves no mark the
// launcher finds: the session then ends as if its containers had died.

func stopMarkPath(in instance.Instance, name string) string {
	return filepath.Join(recordDir(in), ".stop."+name)
}

// markStopped notes that session name, run by owner, is being stopped.
func markStopped(in instance.Instance, name, owner string) error {
	if err := os.MkdirAll(recordDir(in), 0o700); err != nil {
		return err
	}
	return safefile.Write(stopMarkPath(in, name), []byte(owner+"\n"), 0o600)
}

// stopMarked reports whether session name, run by owner, is being stopped.
func stopMarked(in instance.Instance, name, owner string) bool {
	b, err := os.ReadFile(stopMarkPath(in, name))
	return err == nil && strings.TrimSpace(string(b)) == owner
}

// unmarkStopped removes the stop mark of session name when it is owner's.
func unmarkStopped(in instance.Instance, name, owner string) {
	if stopMarked(in, name, owner) {
		_ = os.Remove(stopMarkPath(in, name))
	}
}

// SessionLog is where the output of a detached session's launcher is kept
// (hobbs run --detach): on the host, per instance, after the session ends
// too, for hobbs logs.
func SessionLog(in instance.Instance, name string) string {
	return filepath.Join(xdg.StateHome, "hobbs", "logs", plan.InstanceID(in), name+".log")
}
