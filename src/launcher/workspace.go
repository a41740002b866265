package launcher

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/adrg/xdg"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/plan"
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
					Advise(WorkspaceShared, "session", c.Session)
			}
		case plan.Within(ws, c.Workspace) || plan.Within(c.Workspace, ws):
			return nil, errs.Usagef("the workspace %s and session %s's workspace %s are inside one another: an agent can replace what the other mounts", ws, c.Session, c.Workspace).
				Advise(WorkspaceNested, "session", c.Session)
		}
	}
	b, _ := json.Marshal(wsClaim{Session: s.Name, Workspace: ws, Owner: s.owner, GitCovered: gitCovered})
	name := s.Name + ".json"
	if err := root.Write(name, b, 0o600); err != nil {
		return nil, errs.Wrap(errs.Failure, err, "workspace notes")
	}
	return func() { _ = root.Remove(name) }, nil
}
