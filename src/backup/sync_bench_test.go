package backup

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/memory"
)

// BenchmarkSyncMerge is the merge of one sync (no restic): an instance of
// 2,000 memories takes 1,000 changed memories from another device's
// snapshot — 500 reinforced there (100 of them reinforced here too
// meanwhile) and 500 added there — three-way against the base, with the
// playbooks, skills, agents, vault and review lists compared as a sync
// does. Each round merges into a fresh copy of this device's instance.
func BenchmarkSyncMerge(b *testing.B) {
	dir := b.TempDir()
	base := newInstance(b, filepath.Join(dir, "base"), 2000)
	copyInstance(b, base, filepath.Join(dir, "theirs"))
	copyInstance(b, base, filepath.Join(dir, "ours"))
	theirs, _ := instance.At(filepath.Join(dir, "theirs"))
	oursTpl, _ := instance.At(filepath.Join(dir, "ours"))
	es, err := memory.Open(base, nil).List(memory.ListOptions{})
	if err != nil || len(es) < 500 {
		b.Fatal(len(es), err)
	}
	ts, os_ := memory.Open(theirs, nil), memory.Open(oursTpl, nil)
	for i, e := range es[:500] {
		if _, err := ts.Reinforce(e.ID, "there"); err != nil {
			b.Fatal(err)
		}
		if i < 100 {
			if _, err := os_.Reinforce(e.ID, ""); err != nil {
				b.Fatal(err)
			}
		}
	}
	for i := 0; i < 500; i++ {
		if _, err := ts.Add(fmt.Sprintf("added on the other device, fact number %d of subject %d", i, i*13), memory.AddOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		b.StopTimer()
		ours, _ := instance.At(filepath.Join(dir, fmt.Sprintf("round-%d", n)))
		copyInstance(b, oursTpl, ours.Root)
		res := SyncResult{}
		m := merger{o: SyncOptions{Instance: ours}, res: &res, snap: Snapshot{Device: "other", ShortID: "bench"},
			ours: ours, theirs: theirs, base: &base, now: time.Now()}
		b.StartTimer()
		if err := m.run(); err != nil {
			b.Fatal(err)
		}
		paths, err := m.changed("memory", derived)
		if err != nil {
			b.Fatal(err)
		}
		if err := m.memory(paths); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if len(res.Changed) < 1000 || len(res.Held) != 0 {
			b.Fatalf("merged %d paths, held %d", len(res.Changed), len(res.Held))
		}
		b.StartTimer()
	}
}

func copyInstance(b *testing.B, in instance.Instance, to string) {
	if err := copyTree(in.Root, to); err != nil {
		b.Fatal(err)
	}
}
