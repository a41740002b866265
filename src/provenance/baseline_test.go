package provenance

import (
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hobbs-agent/hobbs/src/safefile"
)

func TestBaselineRoundTrip(t *testing.T) {
	st := &state{Baseline: map[string]fileState{
		"memory/active/a b.md":        {Hash: strings.Repeat("a", 64), Size: 10, Ino: 1 << 40, Ctime: 1764150000123456789, Mtime: -1, Mode: 0o644},
		"skills/x/\"q\"\n\\.md":       {Hash: "special:p:0", Racy: true},
		"agents/custom/ünïcode \t.md": {Hash: "large:9:9", Size: 9},
	}, Objects: map[string]objRef{strings.Repeat("b", 64): {Pack: 3, Off: 1 << 33, Len: 7}}}
	b := encodeBaseline(st)
	got := &state{Baseline: map[string]fileState{}, Objects: map[string]objRef{}}
	if err := decodeBaseline(b, got); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if !reflect.DeepEqual(got.Baseline, st.Baseline) || !reflect.DeepEqual(got.Objects, st.Objects) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, st)
	}
	for _, bad := range []string{"", "hobbs-provenance-baseline 2\n", baselineHeader + "b x 1 2 3\n",
		baselineHeader + "o h 1 2 x\n", baselineHeader + "z h\n", baselineHeader + "b h 1 2 3 4 5 0 notquoted\n"} {
		if err := decodeBaseline([]byte(bad), got); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// sameAsBaseline holds only for a listing of exactly the baseline's files
// with their inode facts, whatever their names hold.
func TestSameAsBaseline(t *testing.T) {
	base := map[string]fileState{
		"memory/active/a b.md":        {Hash: strings.Repeat("a", 64), Size: 10, Ino: 1 << 40, Ctime: 1764150000123456789, Mtime: 5, Mode: 0o644},
		"skills/x/\"q\"\n\\.md":       {Hash: "special:p:0", Ino: 2, Mode: uint32(fs.ModeNamedPipe)},
		"agents/custom/ünïcode \t.md": {Hash: "large:9:9", Size: 9, Ino: 3},
		"playbooks/p.md":              {Hash: strings.Repeat("c", 64), Size: 1, Ino: 4},
	}
	raw := encodeBaseline(&state{Baseline: base})
	listOf := func(m map[string]fileState) *listing {
		l := &listing{}
		for p, f := range m {
			f.Hash = ""
			l.files = append(l.files, listed{p, f})
		}
		return l
	}
	if !sameAsBaseline(raw, listOf(base)) {
		t.Fatal("the baseline's own files are not the same")
	}
	change := map[string]func(m map[string]fileState){
		"a file more":   func(m map[string]fileState) { m["memory/active/new.md"] = fileState{Ino: 9} },
		"a file less":   func(m map[string]fileState) { delete(m, "skills/x/\"q\"\n\\.md") },
		"another ctime": func(m map[string]fileState) { f := m["playbooks/p.md"]; f.Ctime++; m["playbooks/p.md"] = f },
		"another inode": func(m map[string]fileState) {
			f := m["agents/custom/ünïcode \t.md"]
			f.Ino++
			m["agents/custom/ünïcode \t.md"] = f
		},
		"another size":   func(m map[string]fileState) { f := m["memory/active/a b.md"]; f.Size++; m["memory/active/a b.md"] = f },
		"another mode":   func(m map[string]fileState) { f := m["playbooks/p.md"]; f.Mode = 0o600; m["playbooks/p.md"] = f },
		"no inode facts": func(m map[string]fileState) { f := m["playbooks/p.md"]; f.Racy = true; m["playbooks/p.md"] = f },
		"renamed":        func(m map[string]fileState) { m["playbooks/q.md"] = m["playbooks/p.md"]; delete(m, "playbooks/p.md") },
	}
	for name, c := range change {
		m := maps.Clone(base)
		c(m)
		if sameAsBaseline(raw, listOf(m)) {
			t.Errorf("%s: same", name)
		}
	}
	// A racy entry is read again, and so is a listing that failed.
	racy := maps.Clone(base)
	f := racy["playbooks/p.md"]
	f.Racy = true
	racy["playbooks/p.md"] = f
	if sameAsBaseline(encodeBaseline(&state{Baseline: racy}), listOf(base)) {
		t.Error("a racy baseline entry counts as the same")
	}
	l := listOf(base)
	l.err = errors.New("cannot list")
	if sameAsBaseline(raw, l) {
		t.Error("a failed listing counts as the same")
	}
	// A baseline file with a line twice (and one missing) is not the same.
	lines := strings.SplitAfter(string(raw), "\n")
	dup := strings.Join(append([]string{lines[0], lines[1], lines[1]}, lines[3:]...), "")
	if sameAsBaseline([]byte(dup), listOf(base)) {
		t.Error("a baseline with a line twice counts as the same")
	}
	if !sameAsBaseline(nil, &listing{}) || sameAsBaseline(nil, listOf(base)) {
		t.Error("no baseline file: same only when there are no files")
	}
}

// A session that changes nothing writes no new baseline; a version 1
// store (the baseline inside state.json) is read and saved as version 2;
// a baseline file that does not parse is reported and left as it is.
func TestBaselineGenerations(t *testing.T) {
	f := newFixture(t)
	f.begin("s1", terminal)
	f.end("s1")
	gens := func() []string {
		m, _ := filepath.Glob(filepath.Join(f.dir, Dir, "baselines", "*"))
		return m
	}
	first := gens()
	if len(first) != 1 {
		t.Fatalf("baselines: %v", first)
	}
	f.begin("s2", terminal)
	f.end("s2")
	if g := gens(); !reflect.DeepEqual(g, first) {
		t.Errorf("a session that changed nothing wrote a baseline: %v, was %v", g, first)
	}
	f.begin("s3", terminal)
	f.write("memory/active/mem_2.md", memFile("mem_2", "2026-01-02", "New."))
	f.end("s3")
	if g := gens(); len(g) != 1 || g[0] == first[0] {
		t.Errorf("a kept change: baselines %v, was %v", g, first)
	}

	// Version 1: the same state with the baseline inline.
	st, err := f.s.load()
	if err != nil {
		t.Fatal(err)
	}
	v1 := map[string]any{"version": 1, "open": st.Open, "items": st.Items, "next": st.Next, "packs": st.Packs,
		"baseline": st.Baseline, "objects": st.Objects}
	b, _ := json.Marshal(v1)
	if err := os.WriteFile(filepath.Join(f.dir, Dir, "state.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(f.dir, Dir, "baselines"))
	s := New(safefile.Beneath(f.dir), nil)
	got, err := s.load()
	if err != nil || !reflect.DeepEqual(got.Baseline, st.Baseline) || !reflect.DeepEqual(got.Objects, st.Objects) {
		t.Fatalf("version 1: %v", err)
	}
	f.begin("s4", terminal)
	if r := f.end("s4"); r.Kept != 0 || len(r.Held) != 0 {
		t.Errorf("after version 1, a session that changed nothing: %+v", r)
	}
	if len(gens()) != 1 {
		t.Errorf("version 2 was not written: %v", gens())
	}

	// A damaged baseline file.
	g := gens()[0]
	if err := os.WriteFile(g, []byte(baselineHeader+"b garbage\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// (A launcher of its own: one store reads the files once while only
	// it changes them.)
	if err := New(safefile.Beneath(f.dir), nil).Begin("s5", terminal, "o", 0, nil); err == nil || !strings.Contains(err.Error(), "cannot read it") {
		t.Fatalf("a damaged baseline: %v", err)
	}
	if b, _ := os.ReadFile(g); string(b) != baselineHeader+"b garbage\n" {
		t.Errorf("the damaged baseline was rewritten: %q", b)
	}
}
