package launcher

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// Bind sources. The engine resolves a bind mount's source on the host, as
// root, following links: a source the agent could have replaced by a link
// would mount any host path (a directory, a UNIX socket) into the next
// session. So every source is checked before the containers are created —
// reached from its root without following a link in any component (package
// safefile), a real directory or regular file, owned by the session's user —
// and refused otherwise, naming the path and the fix.
//
// A check holds only while the path stays the same until the engine mounts
// it. For the instance the layout ensures that: the sources are entries of
// the instance root or of logs/, and no session mounts either of those, so
// no agent, whichever session it runs in, can rename or replace a source (inside a container each source is a mount point, which
// cannot be renamed either). The workspace's .git is the one source inside
// a directory an agent writes: a concurrent session of the same workspace
// holds it as a mount point too, unless the workspace had no .git when that
// session started (docs/setup.md names what remains there).

// mount is one bind mount of a session.
type mount struct {
	source, target string
	readonly       bool
}

// flag is the mount's --mount value. Read-only is "ro", which both
// engines take (podman 4.3 refuses "readonly" on a volume, and Docker reads
// the two alike).
func (m mount) flag() string {
	f := "type=bind,source=" + m.source + ",target=" + m.target
	if m.readonly {
		f += ",ro"
	}
	return f
}

// unsafeSource is the error for a bind source that failed its check.
func unsafeSource(path, why string) error {
	return errs.Failf("%s %s; a session mounts only real directories and files you own", path, why).
		WithHint("an agent session may have planted it: inspect it (ls -la %s), move it aside, then run hobbs init to recreate what is missing", filepath.Dir(path))
}

// checkSource checks rel beneath root as a bind source: a directory (dir)
// or regular file (with no other hard link) owned by uid, no symbolic link
// in any component. A missing
// directory is made when mkdir is set; anything else missing returns
// ok=false.
func checkSource(root safefile.Root, rel string, dir, mkdir bool, uid int) (ok bool, err error) {
	full := filepath.Join(root.Dir(), filepath.FromSlash(rel))
	fi, err := root.Lstat(rel)
	if errors.Is(err, fs.ErrNotExist) && dir && mkdir {
		if err = root.MkdirAll(rel, 0o755); err == nil {
			fi, err = root.Lstat(rel)
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	var ue *safefile.UnsafeError
	if errors.As(err, &ue) {
		return false, unsafeSource(ue.Path, ue.Why)
	}
	if err != nil {
		return false, errs.Wrap(errs.Failure, err, "check %s", full)
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return false, unsafeSource(full, "is a symbolic link")
	case dir && !fi.IsDir():
		return false, unsafeSource(full, "is not a directory")
	case !dir && !fi.Mode().IsRegular():
		return false, unsafeSource(full, "is not a regular file")
	}
	st, ok := fi.Sys().(*unix.Stat_t)
	if ok && int(st.Uid) != uid {
		return false, unsafeSource(full, fmt.Sprintf("is owned by uid %d, not by the session's user (%d)", st.Uid, uid))
	}
	if ok && !dir && st.Nlink > 1 {
		// The same file under another name, perhaps in a directory the
		// agent writes: mounted read-only here, writable there.
		return false, unsafeSource(full, fmt.Sprintf("has %d hard links", st.Nlink))
	}
	return true, nil
}

// prepareMounts checks every bind source of the session and keeps the
// agent's and the proxy's mounts. It runs before anything is created.
func (s *Session) prepareMounts() error {
	in := s.Instance
	fsys := in.FS()
	if err := checkRoot(in.Root, s.UID); err != nil {
		return err
	}
	var agent []mount
	ws, err := s.workspaceMounts()
	if err != nil {
		return err
	}
	agent = append(agent, ws...)
	for _, sh := range instance.AgentShares() {
		ok, err := checkSource(fsys, sh.Rel, sh.Dir, true, s.UID)
		if err != nil {
			return err
		}
		if ok {
			agent = append(agent, mount{source: filepath.Join(in.Root, filepath.FromSlash(sh.Rel)),
				target: InstanceDir + "/" + sh.Rel, readonly: sh.ReadOnly})
		}
	}
	// The proxy reads policy.yaml from the instance (and reloads it when
	// the host rewrites it, which a file mount would not show) and writes
	// its audit log to logs/egress; the vault is covered (ProxyArgs).
	if _, err := checkSource(fsys, "logs/egress", true, true, s.UID); err != nil {
		return err
	}
	// The vault, when there is one, is covered in the proxy's view by an
	// empty tmpfs, whose mount point must be a real directory.
	if s.coverVault, err = checkSource(fsys, "vault", true, false, s.UID); err != nil {
		return err
	}
	s.agentMounts = agent
	s.proxyMounts = []mount{
		{source: in.Root, target: InstanceDir, readonly: true},
		{source: in.EgressLogs(), target: InstanceDir + "/logs/egress"},
	}
	return nil
}

// checkRoot checks the instance root: a directory owned by uid. Its own
// path may pass through links (the user's choice, out of the agent's
// reach).
func checkRoot(root string, uid int) error {
	var st unix.Stat_t
	if err := unix.Stat(root, &st); err != nil {
		return errs.Missingf("%v", err).WithHint("run hobbs init, or create the directory")
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return unsafeSource(root, "is not a directory")
	}
	if int(st.Uid) != uid {
		return unsafeSource(root, fmt.Sprintf("is owned by uid %d, not by the session's user (%d)", st.Uid, uid))
	}
	return nil
}

// workspaceMounts are the workspace and, when it is a git repository and
// config.yaml's workspace_git_readonly is not false, its .git read-only: a
// mount point of its own, which the agent can neither write, rename nor
// replace. Covering only the files that name commands (config, hooks) is
// not enough: git also reads .git/commondir, which redirects it to another
// directory's config, and any new file the agent may create there is one
// more such switch. Read-only, git in the container can still show status,
// logs and diffs; committing needs workspace_git_readonly: false.
func (s *Session) workspaceMounts() ([]mount, error) {
	ws := s.Workspace
	if real, err := filepath.EvalSymlinks(ws); err == nil {
		ws = real // the user's path; its links are the user's own
	}
	if err := checkRoot(ws, s.UID); err != nil {
		return nil, errs.Wrap(errs.Code(err), err, "workspace")
	}
	if err := checkOverlap(ws, s.Instance.Root); err != nil {
		return nil, err
	}
	if err := checkSensitive(ws, os.Getenv("HOME")); err != nil {
		return nil, err
	}
	s.workspace, s.gitCovered = ws, false
	m := []mount{{source: ws, target: WorkspaceDir}}
	if !s.Config.GitReadOnly() {
		return m, nil
	}
	root := safefile.Beneath(ws)
	fi, err := root.Lstat(".git")
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return m, nil
	case err != nil:
		return nil, errs.Wrap(errs.Failure, err, "workspace")
	case !fi.IsDir():
		// A gitdir file or a link: git on the host follows it to a
		// directory the session does not cover.
		s.Progress("warning: %s is not a directory (a worktree, a submodule or a link): its git configuration is not protected from the agent", filepath.Join(ws, ".git"))
		return m, nil
	}
	if ok, err := checkSource(root, ".git", true, false, s.UID); err != nil || !ok {
		return nil, err
	}
	s.gitCovered = true
	return append(m, mount{source: filepath.Join(ws, ".git"), target: WorkspaceDir + "/.git", readonly: true}), nil
}

// mountFlags turns mounts into --mount arguments.
func mountFlags(ms []mount) []string {
	a := make([]string, 0, 2*len(ms))
	for _, m := range ms {
		a = append(a, "--mount", m.flag())
	}
	return a
}
