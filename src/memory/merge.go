package memory

import (
	"bytes"
	"fmt"
	"github.com/hobbs-agent/hobbs/src/safefile"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hobbs-agent/hobbs/src/layer"
)

// Merging by meaning. A session's layer (src/layer) is merged into the
// memory in effect when the session ends; two sessions that changed the
// same memory meanwhile are merged field by field, not line by line, so that
// what each did survives:
//
//   - reinforced counts what each side added: ours plus theirs' increase;
//   - last_accessed and updated take the later time;
//   - sources and tags take what each side added (and drop what one side
//     removed that the other kept as it was);
//   - the text, status, supersedes, superseded_by, type and source change on
//     one side only, or the same way on both; otherwise it is a conflict,
//     for review (but a source both sides filled in where there was none
//     is ours: each side's reinforcement set it, and sources keeps both);
//   - provenance is the host's stamp: ours, stamped again by the host.
//
// The same memory created on both sides (the same file, no base) is one
// memory when the two texts are the same (the second add is a
// reinforcement); with different texts it is a conflict that the caller
// resolves by giving theirs a free id (Renumber).

// Merge3 merges three versions of one memory file (a layer.Merger). A side
// that does not parse is merged as text.
func Merge3(base, ours, theirs layer.Version) (layer.Version, bool) {
	if !ours.Exists || !theirs.Exists {
		return layer.Version{}, false
	}
	o, err1 := Parse(ours.Data, Active)
	t, err2 := Parse(theirs.Data, Active)
	if err1 != nil || err2 != nil || o.ID != t.ID {
		return layer.Text(base, ours, theirs)
	}
	var b *Memory
	if base.Exists {
		var err error
		if b, err = Parse(base.Data, Active); err != nil || b.ID != o.ID {
			return layer.Text(base, ours, theirs)
		}
	} else {
		if o.Body != t.Body {
			return layer.Version{}, false
		}
		// One memory added on both sides: the second add reinforced it.
		b = &Memory{ID: o.ID, Body: o.Body, Status: o.Status, Type: o.Type, Source: o.Source,
			Supersedes: o.Supersedes, SupersededBy: o.SupersededBy, Created: o.Created, Reinforced: -1}
	}
	m := o
	if t.Reinforced > b.Reinforced {
		m.Reinforced = o.Reinforced + t.Reinforced - b.Reinforced
	}
	m.LastAccessed = later(o.LastAccessed, t.LastAccessed)
	m.Updated = later(o.Updated, t.Updated)
	m.Sources = setMerge(b.Sources, o.Sources, t.Sources)
	m.Tags = setMerge(b.Tags, o.Tags, t.Tags)
	ok := true
	str := func(b, o, t string) string {
		switch {
		case t == b || t == o:
			return o
		case o == b:
			return t
		}
		ok = false
		return o
	}
	m.Body = str(b.Body, o.Body, t.Body)
	m.Status = str(b.Status, o.Status, t.Status)
	m.Type = str(b.Type, o.Type, t.Type)
	if b.Source == "" && o.Source != "" && t.Source != "" {
		// Each side filled in the first source (a reinforcement of a
		// memory that had none): ours stands, sources keeps both.
		m.Source = o.Source
	} else {
		m.Source = str(b.Source, o.Source, t.Source)
	}
	m.SupersededBy = str(b.SupersededBy, o.SupersededBy, t.SupersededBy)
	sup := str(strings.Join(b.Supersedes, "\n"), strings.Join(o.Supersedes, "\n"), strings.Join(t.Supersedes, "\n"))
	m.Supersedes = nil
	if sup != "" {
		m.Supersedes = strings.Split(sup, "\n")
	}
	if !ok {
		return layer.Version{}, false
	}
	out, err := m.Marshal()
	if err != nil {
		return layer.Version{}, false
	}
	return layer.Of(out), true
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// setMerge is ours with what theirs added to base, without what theirs
// removed from base.
func setMerge(base, ours, theirs []string) []string {
	out := []string{}
	for _, v := range ours {
		if slices.Contains(base, v) && !slices.Contains(theirs, v) {
			continue
		}
		out = append(out, v)
	}
	for _, v := range theirs {
		if !slices.Contains(base, v) && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	if len(out) == 0 && ours == nil {
		return nil
	}
	return out
}

// Renumber gives the memory file data the id to: its frontmatter id
// changes, nothing else.
func Renumber(data []byte, to string) ([]byte, error) {
	if !ValidID(to) {
		return nil, fmt.Errorf("not a memory id: %q", to)
	}
	m, err := Parse(data, Active)
	if err != nil {
		return nil, err
	}
	m.ID = to
	return m.Marshal()
}

// FreeID returns the first id of the form of id (PREFIX_NNN, the form
// create gives) that taken does not report as used, or "" when id has no
// such form.
func FreeID(id string, taken func(id string) bool) string {
	i := strings.LastIndexByte(id, '_')
	if i < 0 {
		return ""
	}
	prefix := id[:i+1]
	n, ok := idNumber(id, prefix)
	if !ok {
		return ""
	}
	for next := n + 1; next < 1000000; next++ {
		cand := fmt.Sprintf("%s%03d", prefix, next)
		if !taken(cand) {
			return cand
		}
	}
	return ""
}

// IDOfPath is the id a memory file named by its path (NAME.md) has when
// this package created it.
func IDOfPath(p string) string { return strings.TrimSuffix(path.Base(p), ".md") }

// RenameInLog replaces, in the history lines appended, the memory id from
// with to (a renumbered memory's history follows it).
func RenameInLog(lines []byte, from, to string) []byte {
	return bytes.ReplaceAll(lines, []byte(`"`+from+`"`), []byte(`"`+to+`"`))
}

// MergeLayer merges the changes paths (relative to the memory directory)
// of a session's memory layer into the memory in effect (dir, relative to
// root), under the memory lock: memory files by meaning (Merge3); one added
// on both sides under the same id with different texts is given the next
// free id (Renumber) and its history lines follow it; history.jsonl keeps
// both sides' appended lines; the search index and the lock files are the
// host's own and are left out (the index notices the files' changes). It
// applies what merged (layer.Apply) and returns every outcome, a
// renumbered memory's under its new path.
//
// stamp, when set, is written into the provenance field of each memory the
// merge changes (Stamp), in the same write.
func MergeLayer(root safefile.Root, dir string, base, theirs layer.Tree, paths []string, stamp string) ([]layer.Outcome, error) {
	unlock, err := root.Lock(filepath.Join(root.Dir(), filepath.FromSlash(dir), ".lock"), 30*time.Second)
	if err != nil {
		return nil, err
	}
	defer unlock()
	ours := layer.DirTree{Root: root, Dir: dir}
	var files []string
	history := false
	for _, p := range paths {
		switch {
		case p == "history.jsonl":
			history = true
		case p == ".lock" || strings.HasSuffix(p, ".lock") || p == ".index" || strings.HasPrefix(p, ".index/"):
		default:
			files = append(files, p)
		}
	}
	outs := layer.Trees(files, base, ours, theirs, func(p string) layer.Merger {
		if isMemoryFile(p) {
			return Merge3
		}
		return nil
	})
	renamed := map[string]string{}
	// An id is taken where any side has it: base too (a memory removed in
	// effect since keeps its history, and theirs may hold only what it
	// changed).
	taken := func(id string) bool {
		for _, t := range []string{"active", "archive"} {
			for _, side := range []layer.Tree{ours, theirs, base} {
				if v, _ := side.Get(t + "/" + id + ".md"); v.Exists {
					return true
				}
			}
		}
		for _, to := range renamed {
			if to == id {
				return true
			}
		}
		return false
	}
	for i, o := range outs {
		if !o.Conflict || o.Err != nil || o.Base.Exists || !o.Ours.Exists || !o.Theirs.Exists || !isMemoryFile(o.Path) {
			continue
		}
		from := IDOfPath(o.Path)
		to := FreeID(from, taken)
		if to == "" {
			continue
		}
		data, err := Renumber(o.Theirs.Data, to)
		if err != nil {
			continue
		}
		renamed[from] = to
		np := path.Join(path.Dir(o.Path), to+".md")
		outs[i] = layer.Outcome{Path: np, Result: layer.Of(data), Changed: true, Theirs: layer.Of(data)}
	}
	if history {
		o := layer.Outcome{Path: "history.jsonl"}
		if o.Base, err = base.Get(o.Path); err == nil {
			if o.Ours, err = ours.Get(o.Path); err == nil {
				o.Theirs, err = theirs.Get(o.Path)
			}
		}
		switch {
		case err != nil:
			o.Conflict, o.Err = true, err
		case bytes.HasPrefix(o.Theirs.Data, o.Base.Data) && bytes.HasPrefix(o.Ours.Data, o.Base.Data):
			added := o.Theirs.Data[len(o.Base.Data):]
			for from, to := range renamed {
				added = RenameInLog(added, from, to)
			}
			o.Result = layer.Of(append(append([]byte{}, o.Ours.Data...), added...))
			o.Changed = len(added) > 0
		default:
			o.Result, o.Changed = layer.Merge3(o.Base, o.Ours, o.Theirs, nil)
			o.Conflict = !o.Changed
			o.Changed = o.Changed && !o.Result.Equal(o.Ours)
		}
		outs = append(outs, o)
	}
	if stamp != "" {
		for i, o := range outs {
			if o.Changed && !o.Conflict && o.Result.Exists && isMemoryFile(o.Path) && !AccessOnly(o.Base.Data, o.Theirs.Data) {
				tier := Active
				if strings.HasPrefix(o.Path, "archive/") {
					tier = Archive
				}
				if b, err := Stamp(o.Result.Data, tier, stamp); err == nil {
					outs[i].Result = layer.Of(b)
				}
			}
		}
	}
	return outs, layer.Apply(root, dir, outs)
}

// isMemoryFile reports whether p (relative to the memory directory) is a
// memory of a tier.
func isMemoryFile(p string) bool {
	d, f := path.Split(p)
	return (d == "active/" || d == "archive/") && strings.HasSuffix(f, ".md") && !strings.HasPrefix(f, ".")
}

// AccessOnly reports whether a memory file changed from base to theirs in
// its last_accessed line alone: what every session's context load does,
// bookkeeping rather than a change of what the memory says.
func AccessOnly(base, theirs []byte) bool {
	return !bytes.Equal(base, theirs) && bytes.Equal(WithoutAccess(base), WithoutAccess(theirs))
}

// WithoutAccess is a memory file without its frontmatter's last_accessed
// line.
func WithoutAccess(b []byte) []byte {
	lines := bytes.SplitAfter(b, []byte("\n"))
	if len(lines) == 0 || !bytes.Equal(bytes.TrimRight(lines[0], "\r\n"), []byte("---")) {
		return b
	}
	var out []byte
	in := true
	for i, l := range lines {
		if i > 0 && in && bytes.Equal(bytes.TrimRight(l, "\r\n"), []byte("---")) {
			in = false
		}
		if i > 0 && in && bytes.HasPrefix(l, []byte("last_accessed:")) {
			continue
		}
		out = append(out, l...)
	}
	return out
}
