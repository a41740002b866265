package plan

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hobbs-agent/hobbs/src/config"
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

// unsafeSource is the error for a bind source that failed its check.
func unsafeSource(path, why string) error {
	return errs.Failf("%s %s; a session mounts only real directories and files you own", path, why).
		Advise(UnsafeSource, "dir", filepath.Dir(path))
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

// Survey checks every bind source a session of instance in would mount
// (the workspace ws, absolute, and the instance's shares, whose missing
// directories it makes) for the user uid, and returns the host's facts its
// plan is made from (New). A source that fails its check is an error
// naming the path and the fix. It runs before anything is created, and is
// the one function of the package that touches the host: it reads it, and
// makes the instance's missing share directories as hobbs init does.
func Survey(in instance.Instance, cfg *config.Config, podman bool, ws string, uid, gid int, progress func(string, ...any)) (Host, error) {
	h := Host{Instance: in.Root, UID: uid, GID: gid, Podman: podman, UpstreamCA: os.Getenv(EnvTestUpstreamCA) != ""}
	fsys := in.FS()
	if err := checkRoot(in.Root, uid); err != nil {
		return h, err
	}
	var err error
	if h.Workspace, h.WorkspaceGit, err = surveyWorkspace(in, cfg, ws, uid, progress); err != nil {
		return h, err
	}
	for _, sh := range instance.AgentShares() {
		ok, err := checkSource(fsys, sh.Rel, sh.Dir, true, uid)
		if err != nil {
			return h, err
		}
		if ok {
			h.Shares = append(h.Shares, sh)
		}
	}
	h.Layers = LayerMode(in.Root, podman)
	// The proxy reads policy.yaml from the instance (and reloads it when
	// the host rewrites it, which a file mount would not show) and writes
	// its audit log to logs/egress (instance.EgressLogsRel).
	if _, err := checkSource(fsys, instance.EgressLogsRel, true, true, uid); err != nil {
		return h, err
	}
	// The vault, when there is one, is covered in the proxy's view by an
	// empty tmpfs, whose mount point must be a real directory.
	if h.Vault, err = checkSource(fsys, "vault", true, false, uid); err != nil {
		return h, err
	}
	return h, nil
}

// checkRoot checks the instance root: a directory owned by uid. Its own
// path may pass through links (the user's choice, out of the agent's
// reach).
func checkRoot(root string, uid int) error {
	var st unix.Stat_t
	if err := unix.Stat(root, &st); err != nil {
		return errs.Missingf("%v", err).Advise(MissingRoot)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return unsafeSource(root, "is not a directory")
	}
	if int(st.Uid) != uid {
		return unsafeSource(root, fmt.Sprintf("is owned by uid %d, not by the session's user (%d)", st.Uid, uid))
	}
	return nil
}

// surveyWorkspace checks the workspace ws and returns it with its links
// resolved, and whether its .git is to be mounted read-only: when it is a
// git repository and config.yaml's workspace_git_readonly is not false, its
// .git is a mount point of its own, which the agent can neither write,
// rename nor replace. Covering only the files that name commands (config,
// hooks) is not enough: git also reads .git/commondir, which redirects it
// to another directory's config, and any new file the agent may create
// there is one more such switch. Read-only, git in the container can still
// show status, logs and diffs; committing needs workspace_git_readonly:
// false.
func surveyWorkspace(in instance.Instance, cfg *config.Config, ws string, uid int, progress func(string, ...any)) (string, bool, error) {
	if real, err := filepath.EvalSymlinks(ws); err == nil {
		ws = real // the user's path; its links are the user's own
	}
	if err := checkRoot(ws, uid); err != nil {
		return "", false, errs.Wrap(errs.Code(err), err, "workspace")
	}
	if err := checkOverlap(ws, in.Root); err != nil {
		return "", false, err
	}
	if err := checkSensitive(ws, os.Getenv("HOME")); err != nil {
		return "", false, err
	}
	if cfg != nil && !cfg.GitReadOnly() {
		return ws, false, nil
	}
	root := safefile.Beneath(ws)
	fi, err := root.Lstat(".git")
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return ws, false, nil
	case err != nil:
		return "", false, errs.Wrap(errs.Failure, err, "workspace")
	case !fi.IsDir():
		// A gitdir file or a link: git on the host follows it to a
		// directory the session does not cover.
		if progress != nil {
			progress("warning: %s is not a directory (a worktree, a submodule or a link): its git configuration is not protected from the agent", filepath.Join(ws, ".git"))
		}
		return ws, false, nil
	}
	if ok, err := checkSource(root, ".git", true, false, uid); err != nil || !ok {
		return "", false, err
	}
	return ws, true, nil
}

// Within reports whether p is q or below it (both clean, absolute).
func Within(p, q string) bool {
	rel, err := filepath.Rel(q, p)
	return err == nil && (rel == "." || filepath.IsLocal(rel))
}

// checkOverlap refuses a workspace that holds the instance or lies in it.
func checkOverlap(ws, instanceRoot string) error {
	root := instanceRoot
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	if Within(root, ws) || Within(ws, root) {
		return errs.Usagef("the workspace %s and the instance %s overlap: the session would mount the instance's vault and host-only files into the agent's container", ws, root).
			Advise(WorkspaceOverlap)
	}
	return nil
}

// systemDirs are the directories a workspace may not be or lie in: the
// agent can write its whole workspace, and these hold the system's
// programs, configuration and state.
var systemDirs = []string{"/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/proc",
	"/root", "/run", "/sbin", "/srv", "/sys", "/usr", "/var"}

// checkSensitive refuses a workspace the agent must not be able to write: the
// root directory or a system directory (or anything in one), the user's home
// or a directory that holds it, and a hidden directory of the home (~/.ssh,
// ~/.config, ~/.gnupg, … hold keys and the configuration programs trust).
func checkSensitive(ws, home string) error {
	refuse := func(why string) error {
		return errs.Usagef("the workspace %s is %s: the agent can write all of its workspace", ws, why).
			Advise(SensitiveWorkspace)
	}
	if ws == "/" {
		return refuse("the root directory")
	}
	for _, d := range systemDirs {
		if Within(ws, d) {
			return refuse("a system directory (" + d + ")")
		}
	}
	if home != "" && home != "/" {
		if r, err := filepath.EvalSymlinks(home); err == nil {
			home = r
		}
		if Within(home, ws) {
			return refuse("your home directory or holds it")
		}
		if rel, err := filepath.Rel(home, ws); err == nil && filepath.IsLocal(rel) && strings.HasPrefix(rel, ".") {
			return refuse("a hidden directory of your home, where keys and configuration live")
		}
	}
	return nil
}
