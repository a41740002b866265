package memory

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/hobbs-agent/hobbs/src/instance"
)

func TestScopeOf(t *testing.T) {
	for _, c := range []struct {
		all, archive bool
		want         Scope
	}{{false, false, ScopeActive}, {false, true, ScopeArchive}, {true, false, ScopeAll}, {true, true, ScopeAll}} {
		if got := ScopeOf(c.all, c.archive); got != c.want {
			t.Errorf("ScopeOf(%v, %v) = %v, want %v", c.all, c.archive, got, c.want)
		}
	}
}

func TestWriteList(t *testing.T) {
	var sb strings.Builder
	if err := WriteList(&sb, []Entry{
		{ID: "mem_20260101_001", Status: StatusActive, Reinforced: 2, Tags: []string{"a", "b"}, Summary: "First"},
		{ID: "mem_20260101_002", Status: StatusSuperseded, Summary: "Second"},
	}); err != nil {
		t.Fatal(err)
	}
	want := "ID                STATUS      REINFORCED  TAGS  TEXT\n" +
		"mem_20260101_001  active      2           a,b   First\n" +
		"mem_20260101_002  superseded  0           -     Second\n"
	if sb.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", sb.String(), want)
	}
}

func TestWriteHits(t *testing.T) {
	in, _ := instance.At(t.TempDir())
	p := filepath.Join(in.MemoryActive(), "mem_20260101_001.md")
	hits := []Hit{
		{ID: "mem_20260101_001", Path: p, Lines: []LineHit{{Line: 7, Text: "Runs Kubernetes"}, {Line: 9, Text: "kubectl"}}},
		{Path: filepath.Join(in.MemoryArchive(), "broken.md"), Lines: []LineHit{{Line: 1, Text: "kube"}}},
	}
	var sb strings.Builder
	WriteHits(&sb, in, hits, false)
	want := "mem_20260101_001\tmemory/active/mem_20260101_001.md:7: Runs Kubernetes\n" +
		"mem_20260101_001\tmemory/active/mem_20260101_001.md:9: kubectl\n" +
		"?\tmemory/archive/broken.md:1: kube\n"
	if sb.String() != want {
		t.Errorf("lines:\n%s\nwant:\n%s", sb.String(), want)
	}
	sb.Reset()
	WriteHits(&sb, in, hits, true)
	if want := "mem_20260101_001\tmemory/active/mem_20260101_001.md\n?\tmemory/archive/broken.md\n"; sb.String() != want {
		t.Errorf("files only:\n%s\nwant:\n%s", sb.String(), want)
	}
}

func TestStatsWriteSummary(t *testing.T) {
	s := newStore(t)
	for _, text := range []string{"Likes tea", "Likes coffee"} {
		if _, err := s.Add(text, AddOptions{Tags: []string{"taste", "drink"}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Add("Lives in Paris", AddOptions{Tags: []string{"profile"}}); err != nil {
		t.Fatal(err)
	}
	st, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	if err := st.WriteSummary(&sb); err != nil {
		t.Fatal(err)
	}
	want := "total\t3\ntier\tactive 3\tarchive 0\nstatus\tactive 3\tarchived 0\tsuperseded 0\n" +
		"tag\tdrink\t2\ntag\tprofile\t1\ntag\ttaste\t2\n"
	if sb.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", sb.String(), want)
	}
	st.Problems = 2
	sb.Reset()
	st.WriteSummary(&sb)
	if !strings.HasSuffix(sb.String(), "problems\t2\n") {
		t.Errorf("problems not counted:\n%s", sb.String())
	}
}

func TestTidyResultString(t *testing.T) {
	r := TidyResult{ID: "mem_20250101_001", IdleDays: 200, Limit: 180, Summary: "Old news"}
	if got, want := r.String(), "mem_20250101_001\tidle 200d (limit 180d)\tOld news"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
