package launcher

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/plan"
	"github.com/hobbs-agent/hobbs/src/provenance"
)

func benchMemory(id string, reinforced int, body string) []byte {
	return []byte(fmt.Sprintf("---\nid: %s\ntags: [bench]\ncreated: 2026-01-22T09:30:00Z\nlast_accessed: 2026-01-22T09:30:00Z\n"+
		"reinforced: %d\nsource: conversation\nsupersedes: null\nstatus: active\n---\n\n%s\n", id, reinforced, body))
}

// BenchmarkLayerEnd is the end of an untainted session with 10,000 active
// memories in effect, 100 of which the session changed: 50 reinforced (25
// of them reinforced meanwhile by another session, so merged by meaning)
// and 50 added. One op is the session's end as the launcher does it
// (endLayers: the layer's changes, the merge, the provenance record); the
// layer's making, at the start, is reported apart (make bench).
func BenchmarkLayerEnd(b *testing.B) {
	in, _ := instance.At(b.TempDir())
	active := filepath.Join(in.Root, "memory", "active")
	if err := os.MkdirAll(active, 0o755); err != nil {
		b.Fatal(err)
	}
	for i := range 10000 {
		id := fmt.Sprintf("mem_20260122_%05d", i)
		os.WriteFile(filepath.Join(active, id+".md"), benchMemory(id, 0, fmt.Sprintf("Memory number %d, with some words in it.", i)), 0o644)
	}
	h, err := plan.Survey(in, config.Default(), false, b.TempDir(), os.Getuid(), os.Getgid(), nil)
	if err != nil {
		b.Fatal(err)
	}
	var makeT time.Duration
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		b.StopTimer()
		name := fmt.Sprintf("bench-%d", n)
		h.RunVolume = name + "-run"
		p, err := plan.New(config.Default(), plan.RunSpec{Kind: plan.KindSession, Name: name, Image: "hobbs:local", Host: h})
		if err != nil {
			b.Fatal(err)
		}
		s := &Session{Instance: in, Name: name, plan: p, Progress: func(string, ...any) {}, owner: Owner(),
			Provenance: provenance.New(in.FS(), nil)}
		t0 := time.Now()
		if err := s.makeLayers(); err != nil {
			b.Fatal(err)
		}
		makeT += time.Since(t0)
		if err := s.Provenance.BeginLayer(name, provenance.Origin{Kind: provenance.OriginTerminal}, s.owner, 0, nil); err != nil {
			b.Fatal(err)
		}
		up := filepath.Join(in.Root, plan.LayerDir(name, "memory"), "upper", "active")
		os.MkdirAll(up, 0o755)
		for i := range 50 {
			id := fmt.Sprintf("mem_20260122_%05d", i*7+n%7)
			os.WriteFile(filepath.Join(up, id+".md"), benchMemory(id, 1, fmt.Sprintf("Memory number %d, with some words in it.", i*7+n%7)), 0o644)
			if i%2 == 0 { // reinforced in effect meanwhile
				os.WriteFile(filepath.Join(active, id+".md"), benchMemory(id, 1, fmt.Sprintf("Memory number %d, with some words in it.", i*7+n%7)), 0o644)
			}
			nid := fmt.Sprintf("mem_20260123_%03d_%d", i, n)
			os.WriteFile(filepath.Join(up, nid+".md"), benchMemory(nid, 0, "A new memory."), 0o644)
		}
		b.StartTimer()
		s.endLayers()
		b.StopTimer()
		if _, err := os.Stat(filepath.Join(active, fmt.Sprintf("mem_20260123_%03d_%d.md", 49, n))); err != nil {
			b.Fatalf("not merged: %v", err)
		}
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(makeT.Milliseconds())/float64(b.N), "make-ms/op")
}
