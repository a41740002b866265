package memory

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hobbs-agent/hobbs/src/layer"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

func mergeFile(id, body string, reinforced int, extra string) string {
	return "---\nid: " + id + "\ntags: [a]\ncreated: 2026-01-22T09:30:00Z\nlast_accessed: 2026-01-22T09:30:00Z\nreinforced: " +
		string(rune('0'+reinforced)) + "\nsource: conversation\n" + extra + "supersedes: null\nstatus: active\n---\n\n" + body + "\n"
}

func TestMerge3ReinforcedOnBothSides(t *testing.T) {
	base := layer.Of([]byte(mergeFile("m1", "Likes tea.", 0, "")))
	ours := layer.Of([]byte(mergeFile("m1", "Likes tea.", 1, "sources: [s1]\n")))
	theirs := layer.Of([]byte(mergeFile("m1", "Likes tea.", 2, "sources: [s2]\n")))
	got, ok := Merge3(base, ours, theirs)
	if !ok {
		t.Fatal("two reinforcements conflict")
	}
	m, err := Parse(got.Data, Active)
	if err != nil {
		t.Fatal(err)
	}
	if m.Reinforced != 3 || strings.Join(m.Sources, ",") != "s1,s2" {
		t.Fatalf("reinforced %d sources %v; want 3 and both sources", m.Reinforced, m.Sources)
	}
	// The text edited differently on both sides is a conflict.
	if _, ok := Merge3(base, layer.Of([]byte(mergeFile("m1", "Likes green tea.", 0, ""))), layer.Of([]byte(mergeFile("m1", "Likes black tea.", 0, "")))); ok {
		t.Fatal("two different edits of the text merged")
	}
	// One side's edit and the other's reinforcement both stay.
	got, ok = Merge3(base, layer.Of([]byte(mergeFile("m1", "Likes green tea.", 0, ""))), layer.Of([]byte(mergeFile("m1", "Likes tea.", 1, ""))))
	if m, _ := Parse(got.Data, Active); !ok || strings.TrimSpace(m.Body) != "Likes green tea." || m.Reinforced != 1 {
		t.Fatalf("edit + reinforce: ok %v, %q", ok, got.Data)
	}
}

func TestMergeLayerRenumbersAndAppends(t *testing.T) {
	dir := t.TempDir()
	root := safefile.Beneath(dir)
	put := func(rel, s string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	put("base/history.jsonl", "{\"id\":\"x\"}\n")
	put("memory/history.jsonl", "{\"id\":\"x\"}\n{\"op\":\"add\",\"id\":\"mem_20260122_001\",\"who\":\"ours\"}\n")
	put("memory/active/mem_20260122_001.md", mergeFile("mem_20260122_001", "Ours.", 0, ""))
	put("up/history.jsonl", "{\"id\":\"x\"}\n{\"op\":\"add\",\"id\":\"mem_20260122_001\",\"who\":\"theirs\"}\n")
	put("up/active/mem_20260122_001.md", mergeFile("mem_20260122_001", "Theirs.", 0, ""))
	put("up/.index/x", "junk")
	outs, err := MergeLayer(root, "memory", layer.DirTree{Root: root, Dir: "base"}, layer.DirTree{Root: root, Dir: "up"},
		[]string{"history.jsonl", "active/mem_20260122_001.md", ".index/x"}, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range outs {
		if o.Conflict {
			t.Fatalf("conflict at %s", o.Path)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "memory/active/mem_20260122_002.md"))
	if err != nil || !strings.Contains(string(b), "id: mem_20260122_002") || !strings.Contains(string(b), "Theirs.") {
		t.Fatalf("theirs not renumbered: %q %v", b, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "memory/active/mem_20260122_001.md")); !strings.Contains(string(b), "Ours.") {
		t.Fatal("ours changed")
	}
	h, _ := os.ReadFile(filepath.Join(dir, "memory/history.jsonl"))
	if want := "{\"id\":\"x\"}\n{\"op\":\"add\",\"id\":\"mem_20260122_001\",\"who\":\"ours\"}\n{\"op\":\"add\",\"id\":\"mem_20260122_002\",\"who\":\"theirs\"}\n"; string(h) != want {
		t.Fatalf("history\n%s", h)
	}
	if _, err := os.Stat(filepath.Join(dir, "memory/.index")); err == nil {
		t.Fatal("the layer's index was merged")
	}
}

func TestAccessOnly(t *testing.T) {
	a := []byte(mergeFile("m1", "Likes tea.", 0, ""))
	b := []byte(strings.Replace(string(a), "last_accessed: 2026-01-22T09:30:00Z", "last_accessed: 2026-02-01T10:00:00Z", 1))
	c := []byte(strings.Replace(string(b), "Likes tea.", "Likes coffee.", 1))
	if !AccessOnly(a, b) || AccessOnly(a, c) || AccessOnly(a, a) {
		t.Fatal("AccessOnly")
	}
}

// The layer's side of a merge is the agent's text: any bytes merge or
// conflict, never panic, and a merged memory parses.
func FuzzMerge3(f *testing.F) {
	base := mergeFile("m1", "Likes tea.", 0, "")
	f.Add(base, mergeFile("m1", "Likes tea.", 1, ""), mergeFile("m1", "Likes coffee.", 2, "sources: [x]\n"))
	f.Add("", base, "---\nid: m1\n---\n")
	f.Fuzz(func(t *testing.T, b, o, x string) {
		bv, ov, xv := layer.Of([]byte(b)), layer.Of([]byte(o)), layer.Of([]byte(x))
		if b == "" {
			bv = layer.Absent
		}
		got, ok := Merge3(bv, ov, xv)
		if !ok || !got.Exists {
			return
		}
		if _, err := Parse(ov.Data, Active); err == nil {
			if _, err := Parse(xv.Data, Active); err == nil {
				if _, err := Parse(got.Data, Active); err != nil {
					t.Fatalf("two memories merged into one that does not parse: %v\n%s", err, got.Data)
				}
			}
		}
	})
}

// A memory without a first source, reinforced on both sides from different
// sources, merges: each side filled in source, sources keeps both.
func TestMerge3FirstSourceOnBothSides(t *testing.T) {
	noSource := func(s string) string { return strings.Replace(s, "source: conversation\n", "", 1) }
	withSource := func(s, src string) string {
		return strings.Replace(s, "source: conversation\n", "source: "+src+"\n", 1)
	}
	base := layer.Of([]byte(noSource(mergeFile("m1", "Likes tea.", 0, ""))))
	ours := layer.Of([]byte(withSource(mergeFile("m1", "Likes tea.", 1, "sources: [s1]\n"), "s1")))
	theirs := layer.Of([]byte(withSource(mergeFile("m1", "Likes tea.", 1, "sources: [s2]\n"), "s2")))
	got, ok := Merge3(base, ours, theirs)
	if !ok {
		t.Fatal("two first sources conflict")
	}
	m, err := Parse(got.Data, Active)
	if err != nil {
		t.Fatal(err)
	}
	if m.Reinforced != 2 || m.Source != "s1" || strings.Join(m.Sources, ",") != "s1,s2" {
		t.Fatalf("reinforced %d source %q sources %v", m.Reinforced, m.Source, m.Sources)
	}
}

// A memory renumbered by the merge never takes the id of one the session
// started from, though it is gone from what is in effect now (removed
// there meanwhile) and the layer holds only what it changed (an overlay's
// upper): its history and the supersedes that name it would then name the
// new memory.
func TestMergeLayerRenumberSkipsTheBasesIDs(t *testing.T) {
	dir := t.TempDir()
	root := safefile.Beneath(dir)
	put := func(rel, s string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	put("base/active/mem_20260122_002.md", mergeFile("mem_20260122_002", "Removed in effect since.", 0, ""))
	put("memory/active/mem_20260122_001.md", mergeFile("mem_20260122_001", "Ours.", 0, ""))
	put("up/active/mem_20260122_001.md", mergeFile("mem_20260122_001", "Theirs.", 0, ""))
	outs, err := MergeLayer(root, "memory", layer.DirTree{Root: root, Dir: "base"}, layer.DirTree{Root: root, Dir: "up"},
		[]string{"active/mem_20260122_001.md"}, "")
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, o := range outs {
		paths = append(paths, o.Path)
	}
	if len(outs) != 1 || outs[0].Path != "active/mem_20260122_003.md" {
		t.Fatalf("outcomes %v: want theirs renumbered to mem_20260122_003", paths)
	}
}
