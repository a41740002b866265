package launcher

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/hobbs-agent/hobbs/src/engine"
	"github.com/hobbs-agent/hobbs/src/layer"
	"github.com/hobbs-agent/hobbs/src/plan"
	"github.com/hobbs-agent/hobbs/src/provenance"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// The workspace's instruction files. The workspace is the user's project
// and changes live, but Claude Code loads instructions from it in every
// later session there: CLAUDE.md and CLAUDE.local.md in its working
// directory at the start and, in any directory below it, when it reads a
// file there (.git and node_modules included); .claude/ (settings, skills,
// agents, commands, rules), whose nested copies add skills when it works in
// their directory; .mcp.json at the root; and the files these import
// (@path, up to five hops). The launcher walks the whole workspace for
// them at the session's start, while the session's containers are
// created, and copies them with the walk's record into one host-only file
// (layers/SESSION/workspace/start.json: one write however many there
// are); at the end of a tainted session it walks it again, holds for
// review what of them the session changed and puts back what it started
// from (a file it created removed, and a link, FIFO or device it made
// there too, or a link it pointed elsewhere). A link among them is read,
// never followed, and its target watched like an import. Each walk keeps an index of the workspace's directories for
// the next, which lists again only those that changed (safefile.Scan).

// nestedInstructions are the names Claude Code loads as instructions at
// any depth of the workspace; everything below a directory named .claude
// is watched too.
var nestedInstructions = map[string]bool{"CLAUDE.md": true, "CLAUDE.local.md": true, ".claude": true}

// rootInstructions are loaded from the workspace's top only.
var rootInstructions = map[string]bool{".mcp.json": true}

const (
	// maxInstructionFiles caps how many instruction files a walk lists
	// and maxInstructionBytes how much of them a start copies; beyond
	// either the session's end reports what it did not check.
	maxInstructionFiles = 2000
	maxInstructionBytes = 16 << 20
	// The walk opens at most maxWorkspaceDirs directories, none deeper
	// than maxWorkspaceDepth; what it does not walk is reported.
	maxWorkspaceDirs  = 200000
	maxWorkspaceDepth = 64
	// maxIndexBytes caps the kept index of a walk (about 100 bytes a
	// directory).
	maxIndexBytes = 64 << 20
)

func (s *Session) wsRoot() safefile.Root { return safefile.Beneath(s.plan.Workspace) }

func (s *Session) wsLayerDir() string { return path.Join(plan.LayersDir, s.Name, "workspace") }

// instructionListing is what a walk of a workspace found.
type instructionListing struct {
	// Files are the instruction files (regular), slash-separated,
	// relative to the workspace, sorted.
	Files []string `json:"files"`
	// Odd are instruction paths that are neither a regular file nor a
	// directory (links, FIFOs, devices: never opened).
	Odd []string `json:"odd,omitempty"`
	// Unchecked says what the walk did not check, one sentence each.
	Unchecked []string `json:"unchecked,omitempty"`
	// NotRead are instruction files found but not copied at the start
	// (too large, beyond the caps, unreadable), with why.
	NotRead map[string]string `json:"not_read,omitempty"`
	// Data is each file's content at the start (Files).
	Data map[string][]byte `json:"data,omitempty"`
	// Absent are files the instruction files import that were not there
	// at the start.
	Absent []string `json:"absent,omitempty"`
	// Links are the links among the instruction paths and imports at the
	// start, with their text: Claude Code reads what they point to, which
	// is watched like an import when it is in the workspace.
	Links map[string]string `json:"links,omitempty"`
}

// maxImportHops is how deep imports are followed (Claude Code follows
// at most five hops).
const maxImportHops = 5

// copy reads the listed instruction files into Data (Files becomes what
// it read), and with them the workspace's files they import (@path),
// which Claude Code loads with them.
func (l *instructionListing) copy(ws safefile.Root) {
	type file struct {
		rel  string
		hops int
	}
	queue, seen := make([]file, 0, len(l.Files)), map[string]bool{}
	for _, f := range l.Files {
		queue, seen[f] = append(queue, file{f, 0}), true
	}
	l.Files, l.Data, l.Links = nil, map[string][]byte{}, map[string]string{}
	// follow records the link at rel (hops from an instruction file) and
	// watches what it points to; it reports whether rel is a link.
	follow := func(rel string, hops int) bool {
		t, err := ws.Readlink(rel)
		if err != nil {
			return false
		}
		l.Links[rel] = t
		if to, ok := importPath(rel, t); ok && !seen[to] && hops < maxImportHops && len(seen) < maxInstructionFiles {
			seen[to] = true
			queue = append(queue, file{to, hops + 1})
		}
		return true
	}
	for _, o := range l.Odd {
		follow(o, 0)
	}
	total := 0
	for len(queue) > 0 {
		f := queue[0]
		queue = queue[1:]
		b, err := ws.ReadFile(f.rel, layer.MaxFile)
		if err != nil && f.hops > 0 && follow(f.rel, f.hops) {
			continue
		}
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if f.hops > 0 {
				l.Absent = append(l.Absent, f.rel)
			}
			continue // a listed file gone meanwhile
		case err == nil && total+len(b) > maxInstructionBytes:
			err = fmt.Errorf("beyond the first %s of instruction files", safefile.FormatSize(maxInstructionBytes))
		}
		if err != nil {
			if l.NotRead == nil {
				l.NotRead = map[string]string{}
			}
			l.NotRead[f.rel] = err.Error()
			continue
		}
		total += len(b)
		l.Data[f.rel] = b
		l.Files = append(l.Files, f.rel)
		if f.hops >= maxImportHops || f.hops == 0 && !importing(f.rel) {
			continue
		}
		for _, imp := range imports(b) {
			rel, ok := importPath(f.rel, imp)
			if !ok || seen[rel] {
				continue
			}
			if len(seen) >= maxInstructionFiles {
				l.Unchecked = append(l.Unchecked, fmt.Sprintf("%s, imported by %s, and the imports after it: more than %d instruction files", rel, f.rel, maxInstructionFiles))
				queue = nil
				break
			}
			seen[rel] = true
			queue = append(queue, file{rel, f.hops + 1})
		}
	}
	sort.Strings(l.Files)
	sort.Strings(l.Absent)
}

// importing reports whether the instruction file rel may import files:
// a CLAUDE.md, a CLAUDE.local.md, a rule.
func importing(rel string) bool {
	name := path.Base(rel)
	return name == "CLAUDE.md" || name == "CLAUDE.local.md" || strings.Contains("/"+rel, "/.claude/rules/")
}

// imports are the paths a memory file imports: @path outside code blocks
// and code spans.
func imports(text []byte) (out []string) {
	fenced := false
	for _, line := range strings.Split(string(text), "\n") {
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for k, part := range strings.Split(line, "`") {
			if k%2 == 1 {
				continue // a code span
			}
			for i := 0; i < len(part); i++ {
				if part[i] != '@' || i > 0 && part[i-1] != ' ' && part[i-1] != '\t' {
					continue
				}
				j := i + 1
				for j < len(part) && part[j] != ' ' && part[j] != '\t' && part[j] != '\r' {
					j++
				}
				if p := strings.TrimRight(part[i+1:j], ".,;:!?)]"); p != "" {
					out = append(out, p)
				}
				i = j
			}
		}
	}
	return out
}

// importPath is the workspace's path (relative) of the file that from
// imports as imp, when it is in the workspace: a relative import is
// relative to the importing file, an absolute one is a path in the
// agent's container, where the workspace is plan.WorkspaceDir.
func importPath(from, imp string) (string, bool) {
	switch {
	case strings.HasPrefix(imp, "~"):
		return "", false // the container's home
	case path.IsAbs(imp):
		rel, ok := strings.CutPrefix(path.Clean(imp), plan.WorkspaceDir+"/")
		return rel, ok
	}
	rel := path.Join(path.Dir(from), imp)
	if rel == "." || rel == ".." || strings.HasPrefix(rel, "../") || path.IsAbs(rel) {
		return "", false
	}
	return rel, true
}

// instructionRules names what isInstruction keeps: an index kept under
// other rules listed other entries, so it is not used (change this with
// isInstruction).
const instructionRules = "claude-md,claude-local-md,dot-claude,root-mcp-json"

// isInstruction reports whether rel (slash-separated, relative to the
// workspace) is an instruction path.
func isInstruction(rel string) bool {
	name := path.Base(rel)
	return nestedInstructions[name] || rel == name && rootInstructions[name] ||
		strings.Contains("/"+rel, "/.claude/")
}

// listInstructions walks the tree ws for its instruction files, following
// no link and opening no file; prev (nil: none) is an earlier walk's
// index, whose directories that did not change since are not listed again.
func listInstructions(ws safefile.Root, prev *safefile.DirIndex) (*safefile.DirIndex, instructionListing) {
	var l instructionListing
	idx, found, err := ws.Scan(".", safefile.ScanLimits{MaxDepth: maxWorkspaceDepth, MaxDirs: maxWorkspaceDirs}, prev, isInstruction)
	if err != nil {
		l.Unchecked = append(l.Unchecked, strings.Split(err.Error(), "\n")...)
	}
	sort.Slice(found, func(i, j int) bool { return found[i].Rel < found[j].Rel })
	for _, e := range found {
		switch {
		case !e.Type.IsRegular():
			l.Odd = append(l.Odd, e.Rel)
		case len(l.Files) < maxInstructionFiles:
			l.Files = append(l.Files, e.Rel)
		case len(l.Files) == maxInstructionFiles:
			l.Unchecked = append(l.Unchecked, fmt.Sprintf("%s and the instruction files after it: more than %d", e.Rel, maxInstructionFiles))
		}
	}
	return idx, l
}

// wsIndex is where the last walk's index of the workspace waits for the
// next walk, beside the shares' snapshots (host-only; any machine's index
// serves, a directory another machine listed just never matches).
func (s *Session) wsIndex() string {
	sum := sha256.Sum256([]byte(instructionRules + "\x00" + s.plan.Workspace))
	return path.Join(layerLowerPool, ".workspace", hex.EncodeToString(sum[:16])+".idx")
}

// walkInstructions lists the workspace's instruction files, from the last
// walk's index (any walk of the same tree serves: a directory is taken
// from it only if its inode and change time are unchanged), and keeps
// this walk's index for the next.
func (s *Session) walkInstructions() instructionListing {
	root := s.Instance.FS()
	var prev *safefile.DirIndex
	if b, err := root.ReadFile(s.wsIndex(), maxIndexBytes); err == nil {
		var x safefile.DirIndex
		if x.UnmarshalBinary(b) == nil {
			prev = &x
		}
	}
	idx, l := listInstructions(s.wsRoot(), prev)
	b, err := idx.MarshalBinary()
	if err == nil {
		err = root.MkdirAll(path.Dir(s.wsIndex()), 0o700)
	}
	if err == nil && len(b) <= maxIndexBytes {
		err = root.Write(s.wsIndex(), b, 0o600)
	}
	if err != nil {
		engine.Tracef("workspace: index not kept: %v", err) // the next walk lists every directory
	}
	return l
}

// snapshotInstructions copies the workspace's instruction files as the
// session starts, with the walk's record.
func (s *Session) snapshotInstructions() error {
	if s.plan.Workspace == "" {
		return nil
	}
	ws, root, dir := s.wsRoot(), s.Instance.FS(), s.wsLayerDir()
	engine.Tracef("workspace: walk")
	l := s.walkInstructions()
	defer func() { engine.Tracef("workspace: walked, %d instruction files", len(l.Files)) }()
	l.copy(ws)
	b, err := json.Marshal(l)
	if err == nil {
		err = root.MkdirAll(dir, 0o700)
	}
	if err == nil {
		err = root.Write(path.Join(dir, "start.json"), b, 0o600)
	}
	if err != nil {
		return fmt.Errorf("record the workspace's instruction files: %w", err)
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
	upper := path.Join(s.wsLayerDir(), "upper")
	var start instructionListing
	b, err := root.ReadFile(path.Join(s.wsLayerDir(), "start.json"), 2*maxInstructionBytes)
	if err == nil {
		err = json.Unmarshal(b, &start)
	}
	if err != nil {
		return nil, []string{fmt.Sprintf("workspace %s: its instruction files were not checked: no record of the session's start (%v)", s.plan.Workspace, err)}
	}
	now := s.walkInstructions()
	wasOdd := map[string]bool{}
	for _, o := range start.Odd {
		wasOdd[o] = true
	}
	var relinked []string
	for _, p := range slices.Sorted(maps.Keys(start.Links)) {
		t := start.Links[p]
		cur, err := ws.Readlink(p)
		switch {
		case err == nil && cur == t:
		case errors.Is(err, fs.ErrNotExist):
			problems = append(problems, fmt.Sprintf("workspace %s: the session removed this link (to %s): recreate it if it was yours (ln -s %s %s)", p, t, t, p))
		case err == nil:
			// Pointed elsewhere: Claude Code would load the new target.
			if err := ws.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				problems = append(problems, fmt.Sprintf("workspace %s: the session pointed this link to %s (it pointed to %s), not removed: %v (remove it)", p, cur, t, err))
			} else {
				problems = append(problems, fmt.Sprintf("workspace %s: the session pointed this link to %s (it pointed to %s): removed (ln -s %s %s puts it back)", p, cur, t, t, p))
			}
		default:
			relinked = append(relinked, p) // no longer a link: compared below as created
		}
	}
	for _, o := range now.Odd {
		if _, ok := start.Links[o]; ok {
			continue // above
		}
		if wasOdd[o] {
			problems = append(problems, fmt.Sprintf("workspace %s: an instruction path that is not a regular file or directory (left as it is: remove it)", o))
			continue
		}
		// Made by the session: a link would have Claude Code load what it
		// points to. Removing it follows nothing; it goes first, so that
		// what is put back below is not refused for a link on its way.
		if err := ws.Remove(o); err != nil && !errors.Is(err, fs.ErrNotExist) {
			problems = append(problems, fmt.Sprintf("workspace %s: the session made an instruction path that is not a regular file or directory, not removed: %v (remove it)", o, err))
		} else {
			problems = append(problems, fmt.Sprintf("workspace %s: the session made an instruction path that is not a regular file or directory (a link, FIFO or device): removed", o))
		}
	}
	seen := map[string]bool{}
	paths := append(append(append(append([]string{}, start.Files...), start.Absent...), now.Files...), relinked...)
	for p := range start.NotRead {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if seen[p] {
			continue
		}
		seen[p] = true
		if why, ok := start.NotRead[p]; ok {
			problems = append(problems, fmt.Sprintf("workspace %s: not checked (not read at the session's start: %s)", p, why))
			continue
		}
		b := layer.Absent
		if d, ok := start.Data[p]; ok {
			b = layer.Of(d)
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
	for _, u := range start.Unchecked {
		problems = append(problems, fmt.Sprintf("workspace %s: not checked at the session's start: %s", s.plan.Workspace, u))
	}
	for _, u := range now.Unchecked {
		problems = append(problems, fmt.Sprintf("workspace %s: not checked at the session's end: %s", s.plan.Workspace, u))
	}
	return hold, problems
}

func hashOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
