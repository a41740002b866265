package launcher

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"sort"

	"github.com/hobbs-agent/hobbs/src/layer"
	"github.com/hobbs-agent/hobbs/src/plan"
	"github.com/hobbs-agent/hobbs/src/provenance"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// The workspace's instruction files. The workspace is the user's project
// and changes live, but Claude Code loads instructions from it in every
// later session there: CLAUDE.md and CLAUDE.local.md, .claude/ (settings,
// skills, agents, commands) and .mcp.json. The launcher copies them at the
// session's start (host-only, layers/SESSION/workspace/lower); at the end
// of a tainted session what of them it changed is held for review and put
// back as it was (a file it created removed).

// WorkspaceInstructions are the workspace's instruction files and
// directories, relative to it.
var WorkspaceInstructions = []string{"CLAUDE.md", "CLAUDE.local.md", ".mcp.json", ".claude"}

// maxInstructionFiles caps how many instruction files a session's start
// copies; beyond it the session's end reports what it did not check.
const maxInstructionFiles = 2000

func (s *Session) wsRoot() safefile.Root { return safefile.Beneath(s.plan.Workspace) }

func (s *Session) wsLayerDir() string { return path.Join(plan.LayersDir, s.Name, "workspace") }

// instructionFiles lists the instruction files in the tree ws (relative
// paths, sorted) and what it found that is not a regular file or directory.
func instructionFiles(ws safefile.Root) (files, odd []string) {
	for _, top := range WorkspaceInstructions {
		err := ws.Walk(filepath.Join(ws.Dir(), top), func(p string, d fs.DirEntry, err error) error {
			rel, _ := filepath.Rel(ws.Dir(), p)
			rel = filepath.ToSlash(rel)
			switch {
			case err != nil:
				if !errors.Is(err, fs.ErrNotExist) {
					odd = append(odd, rel)
				}
			case d.Type().IsRegular():
				if len(files) < maxInstructionFiles {
					files = append(files, rel)
				}
			case d.IsDir():
			default:
				odd = append(odd, rel)
			}
			return nil
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			odd = append(odd, top)
		}
	}
	sort.Strings(files)
	return files, odd
}

// copyInstructions copies the workspace's instruction files to dir (in the
// instance).
func (s *Session) copyInstructions(dir string) (files []string, err error) {
	if s.plan.Workspace == "" {
		return nil, nil
	}
	ws, root := s.wsRoot(), s.Instance.FS()
	files, _ = instructionFiles(ws)
	for _, f := range files {
		b, err := ws.ReadFile(f, layer.MaxFile)
		if err != nil {
			continue // gone meanwhile, or not readable: compared at the end as missing
		}
		to := path.Join(dir, f)
		if err := root.MkdirAll(path.Dir(to), 0o700); err != nil {
			return nil, err
		}
		if err := root.Write(to, b, 0o600); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// snapshotInstructions copies the workspace's instruction files as the
// session starts.
func (s *Session) snapshotInstructions() error {
	_, err := s.copyInstructions(path.Join(s.wsLayerDir(), "lower"))
	if err != nil {
		return fmt.Errorf("copy the workspace's instruction files: %w", err)
	}
	return nil
}

// holdInstructions, at a tainted session's end, copies each instruction
// file the session changed, created or removed to the held changes and
// puts the one from the start back.
func (s *Session) holdInstructions() (hold []provenance.LayerChange, problems []string) {
	if s.plan.Workspace == "" {
		return nil, nil
	}
	ws, root := s.wsRoot(), s.Instance.FS()
	lower, upper := path.Join(s.wsLayerDir(), "lower"), path.Join(s.wsLayerDir(), "upper")
	base := layer.DirTree{Root: root, Dir: lower}
	now, odd := instructionFiles(ws)
	before, _ := instructionFiles(safefile.Beneath(filepath.Join(root.Dir(), filepath.FromSlash(lower))))
	seen := map[string]bool{}
	for _, p := range append(append([]string{}, before...), now...) {
		if seen[p] {
			continue
		}
		seen[p] = true
		b, err := base.Get(p)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		cur, err := layer.DirTree{Root: ws}.Get(p)
		if err != nil {
			problems = append(problems, fmt.Sprintf("workspace %s: %v", p, err))
			continue
		}
		if b.Equal(cur) {
			continue
		}
		c := provenance.LayerChange{Path: p, Workspace: s.plan.Workspace, Why: "an instruction file of the workspace"}
		if b.Exists {
			c.Base, c.BaseData = hashOf(b.Data), b.Data
		}
		if cur.Exists {
			c.From = path.Join(upper, p)
			if err := root.MkdirAll(path.Dir(c.From), 0o700); err != nil {
				problems = append(problems, err.Error())
				continue
			}
			if err := root.Write(c.From, cur.Data, 0o600); err != nil {
				problems = append(problems, err.Error())
				continue
			}
		}
		// Put back what the session started from.
		if b.Exists {
			if err := ws.MkdirAll(filepath.Join(ws.Dir(), filepath.Dir(p)), 0o755); err == nil {
				err = ws.Write(p, b.Data, 0o644)
			}
			if err != nil {
				problems = append(problems, fmt.Sprintf("workspace %s: not put back: %v", p, err))
			}
		} else if err := ws.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			problems = append(problems, fmt.Sprintf("workspace %s: not removed: %v", p, err))
		}
		hold = append(hold, c)
	}
	for _, o := range odd {
		problems = append(problems, fmt.Sprintf("workspace %s: an instruction path that is not a regular file or directory (left as it is: remove it)", o))
	}
	return hold, problems
}

func hashOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
