package provenance

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/safefile"
)

// BenchmarkSession is one session's Begin and End on an instance with
// 10,000 active memories, after the first baseline (make bench). The files
// are new, so the first scans read them all (racyWindow); the last
// iteration's times are those of a session on older files.
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
	if _, err := s.End("first", nil, nil); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if err := s.Begin("s", Origin{Kind: OriginTerminal}, "o", 0, nil); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := s.End("s", nil, nil); err != nil {
			b.Fatal(err)
		}
		if i == b.N-1 {
			b.Logf("last: begin %v, end %v", t1.Sub(t0), time.Since(t1))
		}
	}
}
