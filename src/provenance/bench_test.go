package provenance

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/safefile"
)

// BenchmarkSession is one session's Begin, Snapshot and End on an instance with
// 10,000 active memories, none of them changed since the last session
// (make bench).
func BenchmarkSession(b *testing.B) {
	dir := b.TempDir()
	for _, d := range []string{"memory/active", "memory/archive", "playbooks", "skills", "agents", ".locks"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	for i := range 10000 {
		os.WriteFile(filepath.Join(dir, "memory/active", fmt.Sprintf("mem_%05d.md", i)),
			[]byte(fmt.Sprintf("---\nid: mem_%05d\nstatus: active\n---\n\nMemory number %d, with some words in it to look real.\n", i, i)), 0o644)
	}
	s := New(safefile.Beneath(dir), nil)
	t0 := time.Now()
	if err := s.Begin("first", Origin{Kind: OriginTerminal}, "o", 0, nil); err != nil {
		b.Fatal(err)
	}
	b.Logf("first baseline: %v", time.Since(t0))
	if os.Getenv("BENCH_SKIP") != "" {
		b.Skip()
	}
	if _, err := s.End("first", nil, nil, nil); err != nil {
		b.Fatal(err)
	}
	// Once the files are older than racyWindow, a session reads none.
	time.Sleep(racyWindow)
	if err := s.Begin("settle", Origin{Kind: OriginTerminal}, "o", 0, nil); err != nil {
		b.Fatal(err)
	}
	if _, err := s.End("settle", nil, nil, nil); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var begin, snapshot, end time.Duration
	for i := 0; i < b.N; i++ {
		s := New(safefile.Beneath(dir), nil) // a launcher's
		t0 := time.Now()
		if err := s.Begin("s", Origin{Kind: OriginTerminal}, "o", 0, nil); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		snap, err := s.Snapshot()
		if err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if _, err := s.End("s", nil, nil, snap); err != nil {
			b.Fatal(err)
		}
		begin, snapshot, end = begin+t1.Sub(t0), snapshot+t2.Sub(t1), end+time.Since(t2)
	}
	// The launcher's path: the start's record before the agent starts, the
	// snapshot while the proxy stops, the end after it.
	n := float64(b.N) * 1e6
	b.ReportMetric(float64(begin)/n, "begin-ms")
	b.ReportMetric(float64(snapshot)/n, "snapshot-ms")
	b.ReportMetric(float64(end)/n, "end-ms")
}

// BenchmarkSameAsBaseline compares a listing of 10,000 files, in the
// directory's order, with the baseline file that records them.
func BenchmarkSameAsBaseline(b *testing.B) {
	st := &state{Baseline: map[string]fileState{}}
	l := &listing{}
	for i := range 10000 {
		p := fmt.Sprintf("memory/active/mem_%05d.md", (i*7919)%10000)
		f := fileState{Size: 120, Ino: uint64(1000000 + i), Ctime: 1795736832008977337 + int64(i), Mtime: 1795736832008977337, Mode: 0o644}
		l.files = append(l.files, listed{p, f})
		f.Hash = fmt.Sprintf("%064x", i)
		st.Baseline[p] = f
	}
	raw := encodeBaseline(st)
	b.ResetTimer()
	for range b.N {
		if !sameAsBaseline(raw, l) {
			b.Fatal("not the same")
		}
	}
}
