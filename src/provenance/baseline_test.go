package provenance

import (
	"encoding/json"
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
