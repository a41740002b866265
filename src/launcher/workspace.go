package launcher

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/adrg/xdg"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// Workspaces. A session's agent can write its whole workspace, so any path
// below another live session's workspace is the other agent's to replace
// (by a link to a directory of the user's, which the engine would then
// mount), and so is the workspace's .git when that session does not mount
// it read-only (it had none when it started, or workspace_git_readonly is
// false): the agent could swap it for a link between this launcher's check
// and the engine's mount. Each launcher therefore notes its workspace in
// the host's state directory ($XDG_STATE_HOME/hobbs/workspaces, out of any
// agent's reach) for the session's life, and a run refuses a workspace that
// is below or above a live session's, or that shares one whose .git is not
// covered. The instance and the workspace never overlap either: a workspace
// holding the instance would mount the vault into the session.

// wsClaim is one live session's note of its workspace.
type wsClaim struct {
	Session    string `json:"session"`
	Workspace  string `json:"workspace"`   // resolved, absolute
	Owner      string `json:"owner"`       // the launcher (Owner)
	GitCovered bool   `json:"git_covered"` // its .git is mounted read-only
}

// claimsDir is where launchers note their workspaces.
func claimsDir() string { return filepath.Join(xdg.StateHome, "hobbs", "workspaces") }

// within reports whether p is q or below it (both clean, absolute).
func within(p, q string) bool {
	rel, err := filepath.Rel(q, p)
	return err == nil && (rel == "." || filepath.IsLocal(rel))
}

// checkOverlap refuses a workspace that holds the instance or lies in it.
func checkOverlap(ws, instanceRoot string) error {
	root := instanceRoot
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	if within(root, ws) || within(ws, root) {
		return errs.Usagef("the workspace %s and the instance %s overlap: the session would mount the instance's vault and host-only files into the agent's container", ws, root).
			WithHint("use a workspace directory outside the instance that does not contain it (hobbs run --workspace DIR, or workspace in config.yaml)")
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
			WithHint("use a directory of its own for the agent's work, e.g. hobbs run --workspace ~/hobbs-workspace")
	}
	if ws == "/" {
		return refuse("the root directory")
	}
	for _, d := range systemDirs {
		if within(ws, d) {
			return refuse("a system directory (" + d + ")")
		}
	}
	if home != "" && home != "/" {
		if r, err := filepath.EvalSymlinks(home); err == nil {
			home = r
		}
		if within(home, ws) {
			return refuse("your home directory or holds it")
		}
		if rel, err := filepath.Rel(home, ws); err == nil && filepath.IsLocal(rel) && strings.HasPrefix(rel, ".") {
			return refuse("a hidden directory of your home, where keys and configuration live")
		}
	}
	return nil
}

// claimWorkspace checks the session's workspace against the live sessions'
// notes and adds its own; release removes it. Notes of launchers that are
// gone are removed on the way.
func (s *Session) claimWorkspace(dir, ws string, gitCovered bool) (release func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, errs.Wrap(errs.Failure, err, "workspace notes")
	}
	root := safefile.Beneath(dir)
	unlock, err := root.Lock(".lock", 10*time.Second)
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "workspace notes")
	}
	defer unlock()
	ents, err := root.ReadDir(".")
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "workspace notes")
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") || e.Name() == s.Name+".json" {
			continue
		}
		b, err := root.ReadFile(e.Name(), 64<<10)
		var c wsClaim
		if err != nil || json.Unmarshal(b, &c) != nil || !OwnerAlive(c.Owner) {
			_ = root.Remove(e.Name())
			continue
		}
		switch {
		case c.Workspace == ws:
			if !c.GitCovered && gitCovered {
				return nil, errs.Usagef("session %s uses the workspace %s with its .git writable: its agent could swap .git for a link while this session mounts it", c.Session, ws).
					WithHint("stop that session first (hobbs stop %s), or use another workspace", c.Session)
			}
		case within(ws, c.Workspace) || within(c.Workspace, ws):
			return nil, errs.Usagef("the workspace %s and session %s's workspace %s are inside one another: an agent can replace what the other mounts", ws, c.Session, c.Workspace).
				WithHint("stop that session first (hobbs stop %s), or use a workspace outside it", c.Session)
		}
	}
	b, _ := json.Marshal(wsClaim{Session: s.Name, Workspace: ws, Owner: s.owner, GitCovered: gitCovered})
	name := s.Name + ".json"
	if err := root.Write(name, b, 0o600); err != nil {
		return nil, errs.Wrap(errs.Failure, err, "workspace notes")
	}
	return func() { _ = root.Remove(name) }, nil
}
