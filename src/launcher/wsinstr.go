package launcher

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	"golang.org/x/sys/unix"
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
// Beyond its caps a tainted end is fail-safe: what it does not copy or
// walk that the session may have made or changed it takes out of effect
// whole (setAside, setAsideDir).

// nestedInstructions are the names Claude Code loads as instructions at
// any depth of the workspace; everything below a directory named .claude
// is watched too.
var nestedInstructions = map[string]bool{"CLAUDE.md": true, "CLAUDE.local.md": true, ".claude": true}

// rootInstructions are loaded from the workspace's top only.
var rootInstructions = map[string]bool{".mcp.json": true}

// topInstructions are the files Claude Code loads from the workspace's
// top in every session there: they rank before any other for the caps.
var topInstructions = map[string]bool{"CLAUDE.md": true, "CLAUDE.local.md": true, ".mcp.json": true,
	".claude/CLAUDE.md": true, ".claude/settings.json": true, ".claude/settings.local.json": true}

// instructionRank orders instruction files for the caps: the top's files,
// then the rest of the top's .claude tree, then the nested ones.
func instructionRank(rel string) int {
	switch {
	case topInstructions[rel]:
		return 0
	case strings.HasPrefix(rel, ".claude/"):
		return 1
	}
	return 2
}

const (
	// maxInstructionFiles caps how many instruction files a start copies
	// and a tainted end holds as text, maxInstructionBytes how much of
	// them either copies, in rank order (instructionRank). The start
	// records the size, times and inode of each other file it found (at
	// most maxInstructionNames); a tainted end takes out of effect a file
	// it did not copy whose record changed, and any file not in the record
	// (setAside).
	maxInstructionFiles = 2000
	maxInstructionBytes = 16 << 20
	maxInstructionNames = 100000
	// maxAsideBytes caps what a tainted end copies of files it takes out
	// of effect when the workspace is on another file system than the
	// instance (no rename reaches it); maxHashBytes how much of a file
	// it removes instead it reads to record its hash.
	maxAsideBytes = 64 << 20
	maxHashBytes  = 1 << 30
	// maxStartRecord caps the start's record as the end reads it: the
	// copies (maxInstructionBytes, base64) and maxInstructionNames
	// names with their lstat.
	maxStartRecord = 64 << 20
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
	// WalkIncomplete: the walk did not walk every directory (beyond its
	// caps, or one it could not list).
	WalkIncomplete bool `json:"walk_incomplete,omitempty"`
	// NotRead are instruction files found but not copied at the start
	// (too large, beyond the caps, unreadable), with why.
	NotRead map[string]string `json:"not_read,omitempty"`
	// Uncopied are what lstat said of the files in NotRead (those it
	// found regular) at the start.
	Uncopied map[string]fileStat `json:"uncopied,omitempty"`
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

// fileStat is what lstat says of a file the start did not copy: any
// write to it, or its replacement, changes one of them (the change time
// cannot be set back).
type fileStat struct {
	Size  int64  `json:"size"`
	Mtime int64  `json:"mtime"`
	Ctime int64  `json:"ctime"`
	Ino   uint64 `json:"ino"`
}

// statOf is what lstat says of rel in ws, and whether it is a regular
// file.
func statOf(ws safefile.Root, rel string) (fileStat, bool, error) {
	fi, err := ws.Lstat(rel)
	if err != nil {
		return fileStat{}, false, err
	}
	st, ok := fi.Sys().(*unix.Stat_t)
	if !ok {
		return fileStat{}, false, fmt.Errorf("%s: no file status", rel)
	}
	return fileStat{Size: st.Size, Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano(), Ino: st.Ino}, fi.Mode().IsRegular(), nil
}

// copy reads the listed instruction files into Data (Files becomes what
// it read), in rank order, within the caps, and with them the
// workspace's files they import (@path), which Claude Code loads with
// them: right after the file importing them. What it does not copy it
// records in NotRead and, a regular file, in Uncopied.
func (l *instructionListing) copy(ws safefile.Root) {
	type file struct {
		rel  string
		hops int
	}
	queue, imps, seen := make([]file, 0, len(l.Files)), []file(nil), map[string]bool{}
	for _, f := range l.Files {
		queue, seen[f] = append(queue, file{f, 0}), true
	}
	l.Files, l.Data, l.Links = nil, map[string][]byte{}, map[string]string{}
	imported := 0
	// follow records the link at rel (hops from an instruction file) and
	// watches what it points to; it reports whether rel is a link.
	follow := func(rel string, hops int) bool {
		t, err := ws.Readlink(rel)
		if err != nil {
			return false
		}
		l.Links[rel] = t
		if to, ok := importPath(rel, t); ok && !seen[to] && hops < maxImportHops && imported < maxInstructionFiles {
			seen[to], imported = true, imported+1
			imps = append(imps, file{to, hops + 1})
		}
		return true
	}
	for _, o := range l.Odd {
		follow(o, 0)
	}
	notRead := func(rel string, why error) {
		if l.NotRead == nil {
			l.NotRead, l.Uncopied = map[string]string{}, map[string]fileStat{}
		}
		l.NotRead[rel] = why.Error()
		if st, regular, err := statOf(ws, rel); err == nil && regular {
			l.Uncopied[rel] = st
		}
	}
	total := 0
	for len(queue) > 0 || len(imps) > 0 {
		var f file
		if n := len(imps); n > 0 {
			f, imps = imps[n-1], imps[:n-1]
		} else {
			f, queue = queue[0], queue[1:]
		}
		var b []byte
		err := fmt.Errorf("beyond the first %d instruction files", maxInstructionFiles)
		if len(l.Files) < maxInstructionFiles {
			b, err = ws.ReadFile(f.rel, layer.MaxFile)
		} else if _, lerr := ws.Lstat(f.rel); lerr != nil {
			err = lerr
		}
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
			notRead(f.rel, err)
			continue
		}
		total += len(b)
		l.Data[f.rel] = b
		l.Files = append(l.Files, f.rel)
		if f.hops >= maxImportHops || f.hops == 0 && !importing(f.rel) {
			continue
		}
		var next []file
		for _, imp := range imports(b) {
			rel, ok := importPath(f.rel, imp)
			if !ok || seen[rel] {
				continue
			}
			if imported >= maxInstructionFiles {
				l.Unchecked = append(l.Unchecked, fmt.Sprintf("%s, imported by %s, and the imports after it: more than %d imported files", rel, f.rel, maxInstructionFiles))
				break
			}
			seen[rel], imported = true, imported+1
			next = append(next, file{rel, f.hops + 1})
		}
		slices.Reverse(next) // imps is a stack: taken in the order imported
		imps = append(imps, next...)
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

// rankedBefore orders instruction files by rank, then path.
func rankedBefore(a, b string) bool {
	if ra, rb := instructionRank(a), instructionRank(b); ra != rb {
		return ra < rb
	}
	return a < b
}

// listInstructions walks the tree ws for its instruction files, following
// no link and opening no file; prev (nil: none) is an earlier walk's
// index, whose directories that did not change since are not listed again.
// The top's .claude tree is walked first; directories later (nil: none)
// names are walked after all the others.
func listInstructions(ws safefile.Root, prev *safefile.DirIndex, later func(rel string) bool) (*safefile.DirIndex, instructionListing) {
	var l instructionListing
	lim := safefile.ScanLimits{MaxDepth: maxWorkspaceDepth, MaxDirs: maxWorkspaceDirs, Defer: later,
		First: func(rel string) bool { return rel == ".claude" || strings.HasPrefix(rel, ".claude/") }}
	idx, found, err := ws.Scan(".", lim, prev, isInstruction)
	if err != nil {
		l.WalkIncomplete = true
		l.Unchecked = append(l.Unchecked, strings.Split(err.Error(), "\n")...)
	}
	sort.Slice(found, func(i, j int) bool { return rankedBefore(found[i].Rel, found[j].Rel) })
	for _, e := range found {
		if e.Type.IsRegular() {
			l.Files = append(l.Files, e.Rel)
		} else {
			l.Odd = append(l.Odd, e.Rel)
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
// this walk's index for the next; it returns the index too, and its
// encoding. later is listInstructions'.
func (s *Session) walkInstructions(later func(rel string) bool) (instructionListing, *safefile.DirIndex, []byte) {
	root := s.Instance.FS()
	var prev *safefile.DirIndex
	if b, err := root.ReadFile(s.wsIndex(), maxIndexBytes); err == nil {
		var x safefile.DirIndex
		if x.UnmarshalBinary(b) == nil {
			prev = &x
		}
	}
	idx, l := listInstructions(s.wsRoot(), prev, later)
	b, err := idx.MarshalBinary()
	if err == nil {
		err = root.MkdirAll(path.Dir(s.wsIndex()), 0o700)
	}
	if err == nil && len(b) <= maxIndexBytes {
		err = root.Write(s.wsIndex(), b, 0o600)
	}
	if err != nil {
		engine.Tracef("workspace: index not kept: %v", err) // the next walk lists every directory
		b = nil
	}
	return l, idx, b
}

// snapshotInstructions copies the workspace's instruction files as the
// session starts, with the walk's record.
func (s *Session) snapshotInstructions() error {
	if s.plan.Workspace == "" {
		return nil
	}
	ws, root, dir := s.wsRoot(), s.Instance.FS(), s.wsLayerDir()
	engine.Tracef("workspace: walk")
	l, _, idxBytes := s.walkInstructions(nil)
	defer func() { engine.Tracef("workspace: walked, %d instruction files", len(l.Files)) }()
	if n := len(l.Files); n > maxInstructionNames {
		l.Unchecked = append(l.Unchecked, fmt.Sprintf("%s and the %d instruction files after it: not recorded, more than %d (a tainted end takes them for the session's)", l.Files[maxInstructionNames], n-maxInstructionNames-1, maxInstructionNames))
		l.Files = l.Files[:maxInstructionNames]
	}
	l.copy(ws)
	b, err := json.Marshal(l)
	if err == nil {
		err = root.MkdirAll(dir, 0o700)
	}
	if err == nil {
		err = root.Write(path.Join(dir, "start.json"), b, 0o600)
	}
	if err == nil && idxBytes != nil {
		// The directories the start walked, for an end to walk first:
		// the index just kept, by another name (a later walk's index
		// replaces that file, not this one), unless another walk
		// replaced it meanwhile.
		start := path.Join(dir, "start.idx")
		_ = root.Remove(start)
		if root.Link(s.wsIndex(), start) == nil {
			if b, rerr := root.ReadFile(start, maxIndexBytes); rerr == nil && bytes.Equal(b, idxBytes) {
				return nil
			}
		}
		err = root.Write(start, idxBytes, 0o600)
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
	b, err := root.ReadFile(path.Join(s.wsLayerDir(), "start.json"), maxStartRecord)
	if err == nil {
		err = json.Unmarshal(b, &start)
	}
	if err != nil {
		return nil, []string{fmt.Sprintf("workspace %s: its instruction files were not checked: no record of the session's start (%v)", s.plan.Workspace, err)}
	}
	now, nowIdx, _ := s.walkInstructions(nil)
	var startIdx *safefile.DirIndex
	if len(nowIdx.Unwalked()) > 0 {
		// Left out by the caps: walked again (from the index just kept),
		// the directories the start walked first and those the session
		// made after, so that the caps leave out only the session's.
		if b, err := root.ReadFile(path.Join(s.wsLayerDir(), "start.idx"), maxIndexBytes); err == nil {
			var x safefile.DirIndex
			if x.UnmarshalBinary(b) == nil {
				startIdx = &x
				now, nowIdx, _ = s.walkInstructions(func(rel string) bool { return !x.Has(rel) })
			}
		}
	}
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
	sort.Slice(paths, func(i, j int) bool { return rankedBefore(paths[i], paths[j]) })
	e := endBudget{s: s, upper: upper}
	for _, p := range paths {
		if seen[p] {
			continue
		}
		seen[p] = true
		if was, ok := start.Uncopied[p]; ok {
			// Not copied at the start: compared by what lstat says.
			cur, _, err := statOf(ws, p)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				problems = append(problems, fmt.Sprintf("workspace %s: the session removed it; not put back (not copied at the session's start: %s)", p, start.NotRead[p]))
			case err != nil:
				problems = append(problems, fmt.Sprintf("workspace %s: %v", p, err))
			case cur != was:
				c, problem := e.setAside(p, provenance.LayerChange{Base: fmt.Sprintf("large:%d:%d", was.Size, was.Ctime)})
				if problem == "" {
					problem = fmt.Sprintf("workspace %s: the session changed it: removed", p)
				}
				problems = append(problems, problem+"; what it was at the session's start is not put back (not copied then: "+start.NotRead[p]+")")
				hold = append(hold, c...)
			}
			continue
		}
		if why, ok := start.NotRead[p]; ok {
			problems = append(problems, fmt.Sprintf("workspace %s: not checked (not read at the session's start: %s)", p, why))
			continue
		}
		b := layer.Absent
		if d, ok := start.Data[p]; ok {
			b = layer.Of(d)
		}
		c := provenance.LayerChange{Path: p, Workspace: s.plan.Workspace, Why: "an instruction file of the workspace"}
		if b.Exists {
			c.Base, c.BaseData = hashOf(b.Data), b.Data
		}
		cur, err := e.read(p, b)
		switch {
		case err != nil:
			// Too large to copy, beyond the end's caps, or unreadable:
			// moved out of effect whole (or removed), not compared.
			held, problem := e.setAside(p, c)
			if !errors.Is(err, errAside) {
				problem = fmt.Sprintf("workspace %s: %v: %s", p, err, problem)
			}
			if problem != "" {
				problems = append(problems, problem)
			}
			hold = append(hold, held...)
		case b.Equal(cur):
			continue
		case cur.Exists:
			c.From = path.Join(upper, p)
			if err := root.MkdirAll(path.Dir(c.From), 0o700); err != nil {
				problems = append(problems, err.Error())
				continue
			}
			if err := root.Write(c.From, cur.Data, 0o600); err != nil {
				problems = append(problems, err.Error())
				continue
			}
			hold = append(hold, c)
		default:
			hold = append(hold, c)
		}
		// Put back what the session started from.
		if b.Exists {
			err := ws.MkdirAll(filepath.Join(ws.Dir(), filepath.Dir(p)), 0o755)
			if err == nil {
				err = ws.Write(p, b.Data, 0o644)
			}
			if err != nil {
				problems = append(problems, fmt.Sprintf("workspace %s: not put back: %v", p, err))
			}
		} else if err := ws.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			problems = append(problems, fmt.Sprintf("workspace %s: not removed: %v", p, err))
		}
	}
	if startIdx != nil && !start.WalkIncomplete {
		// Beyond the caps only directories the session made are left
		// out: each is taken out of effect whole.
		for _, d := range nowIdx.Unwalked() {
			if !startIdx.Has(d) {
				held, problem := e.setAsideDir(d)
				if problem != "" {
					problems = append(problems, problem)
				}
				hold = append(hold, held...)
			}
		}
	}
	if e.dropped > 0 {
		problems = append(problems, fmt.Sprintf("workspace %s: %s and %d more instruction files the session changed or created beyond the first %d: removed, not held (what the session started from put back)", s.plan.Workspace, e.firstDropped, e.dropped-1, maxInstructionFiles))
	}
	for _, u := range start.Unchecked {
		problems = append(problems, fmt.Sprintf("workspace %s: not checked at the session's start: %s", s.plan.Workspace, u))
	}
	for _, u := range now.Unchecked {
		problems = append(problems, fmt.Sprintf("workspace %s: not checked at the session's end: %s", s.plan.Workspace, u))
	}
	return hold, problems
}

// errAside: a file a tainted end does not read, but takes out of effect
// whole.
var errAside = errors.New("set aside")

// endBudget is what a tainted end has copied so far: at most
// maxInstructionFiles files held, maxInstructionBytes of them read as
// text, maxAsideBytes copied whole to another file system.
type endBudget struct {
	s            *Session
	upper        string
	held, text   int
	aside        int64
	dropped      int
	firstDropped string
}

// read reads p to compare it with base, what the start copied (a read
// as long as base), and for a held copy when it differs, or says
// (errAside) it is to be set aside: too large, or beyond the end's caps.
func (e *endBudget) read(p string, base layer.Version) (layer.Version, error) {
	ws := e.s.wsRoot()
	st, _, err := statOf(ws, p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return layer.Absent, nil
	case err != nil:
		return layer.Absent, err
	}
	over := func(n int64) bool {
		return n > layer.MaxFile || int64(e.text)+n > maxInstructionBytes || e.held >= maxInstructionFiles
	}
	same := base.Exists && st.Size == int64(len(base.Data))
	if !same && over(st.Size) {
		return layer.Absent, errAside
	}
	v, err := layer.DirTree{Root: ws}.Get(p)
	switch {
	case errors.Is(err, safefile.ErrTooLarge):
		return layer.Absent, errAside // it grew meanwhile
	case err != nil || base.Equal(v):
		return v, err
	case same && over(int64(len(v.Data))):
		return layer.Absent, errAside
	}
	e.text += len(v.Data)
	e.held++
	return v, nil
}

// setAside takes the workspace's file p out of effect, unread, as a held
// change like c (its Base what the session started from): moved whole
// into the session's layer (a rename; on another file system, a copy
// within maxAsideBytes) to be held as an entry that cannot be shown, or,
// beyond the caps, removed with its hash recorded in the problem it
// returns. Past maxInstructionFiles held, the session's file is removed
// and counted.
func (e *endBudget) setAside(p string, c provenance.LayerChange) ([]provenance.LayerChange, string) {
	ws, root := e.s.wsRoot(), e.s.Instance.FS()
	c.Path, c.Workspace, c.Why = p, e.s.plan.Workspace, "an instruction file of the workspace"
	st, _, err := statOf(ws, p)
	if err != nil {
		return nil, fmt.Sprintf("workspace %s: not taken out of effect: %v", p, err)
	}
	if e.held >= maxInstructionFiles {
		if e.dropped++; e.dropped == 1 {
			e.firstDropped = p
		}
		if err := ws.Remove(p); err != nil {
			return nil, fmt.Sprintf("workspace %s: not removed: %v", p, err)
		}
		return nil, ""
	}
	c.From, c.Entry = path.Join(e.upper, p), fmt.Sprintf("large:%d:%d", st.Size, st.Ctime)
	if err := root.MkdirAll(path.Dir(c.From), 0o700); err != nil {
		return nil, fmt.Sprintf("workspace %s: not taken out of effect: %v", p, err)
	}
	err = ws.MoveTo(p, root, c.From)
	if errors.Is(err, unix.EXDEV) {
		// Another file system: a copy within maxAsideBytes, or the file
		// removed, its hash recorded.
		copied := false
		if e.aside+st.Size <= maxAsideBytes {
			if b, rerr := ws.ReadFile(p, st.Size); rerr == nil && root.Write(c.From, b, 0o600) == nil {
				e.aside += int64(len(b))
				copied = true
			}
		}
		var sum string
		var herr error
		if !copied {
			sum, herr = hashFile(ws, p)
		}
		err = ws.Remove(p)
		switch {
		case err != nil:
			return nil, fmt.Sprintf("workspace %s: not removed: %v", p, err)
		case !copied:
			return nil, fmt.Sprintf("workspace %s: the session's version (%s, %s) was not copied (larger than the %s a session's end copies from another file system): removed, not held", p, safefile.FormatSize(st.Size), orWhy(sum, herr), safefile.FormatSize(maxAsideBytes))
		}
	}
	if err != nil {
		return nil, fmt.Sprintf("workspace %s: not taken out of effect: %v", p, err)
	}
	e.held++
	return []provenance.LayerChange{c}, fmt.Sprintf("workspace %s: the session's version (%s) was not copied (larger than %s, or beyond the %d files and %s a session's end copies): moved whole into the held changes, where it can be rejected, not shown", p, safefile.FormatSize(st.Size), safefile.FormatSize(layer.MaxFile), maxInstructionFiles, safefile.FormatSize(maxInstructionBytes))
}

// setAsideDir takes the workspace's directory p, which the session made
// and a walk left out (beyond its caps), out of effect whole, unread:
// moved into the session's layer and held as an entry that cannot be
// shown, or, on another file system, removed. Past maxInstructionFiles
// held, it is moved there and counted, not held (the layer is discarded).
func (e *endBudget) setAsideDir(p string) ([]provenance.LayerChange, string) {
	ws, root := e.s.wsRoot(), e.s.Instance.FS()
	c := provenance.LayerChange{Path: p, From: path.Join(e.upper, p), Entry: "special:unwalked-dir:0", Workspace: e.s.plan.Workspace,
		Why: "a directory the session made in the workspace beyond what its walk for instruction files lists"}
	err := root.MkdirAll(path.Dir(c.From), 0o700)
	if err == nil {
		err = ws.MoveTo(p, root, c.From)
	}
	if errors.Is(err, unix.EXDEV) {
		if err := ws.RemoveAll(p); err != nil {
			return nil, fmt.Sprintf("workspace %s: a directory the session made beyond what a walk lists, not removed: %v (remove it)", p, err)
		}
		return nil, fmt.Sprintf("workspace %s: a directory the session made beyond the %d directories or %d levels a walk lists: removed, not held (on another file system than the instance)", p, maxWorkspaceDirs, maxWorkspaceDepth)
	}
	if err != nil {
		return nil, fmt.Sprintf("workspace %s: a directory the session made beyond what a walk lists, not taken out of effect: %v (remove it)", p, err)
	}
	if e.held >= maxInstructionFiles {
		if e.dropped++; e.dropped == 1 {
			e.firstDropped = p
		}
		return nil, ""
	}
	e.held++
	return []provenance.LayerChange{c}, fmt.Sprintf("workspace %s: a directory the session made beyond the %d directories or %d levels a walk lists: moved whole into the held changes, where it can be rejected, not shown", p, maxWorkspaceDirs, maxWorkspaceDepth)
}

// hashFile is the SHA-256 of the regular file p, read up to maxHashBytes.
func hashFile(ws safefile.Root, p string) (string, error) {
	f, err := ws.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, maxHashBytes+1))
	if err != nil {
		return "", err
	}
	if n > maxHashBytes {
		return "", fmt.Errorf("larger than %s, not hashed", safefile.FormatSize(maxHashBytes))
	}
	return "sha256 " + hex.EncodeToString(h.Sum(nil)), nil
}

func orWhy(s string, err error) string {
	if err != nil {
		return err.Error()
	}
	return s
}

func hashOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
