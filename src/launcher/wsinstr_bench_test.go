package launcher

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/plan"
)

// benchWorkspace writes a tree like a project's node_modules: pkgs
// packages of 10 directories of 10 files each, a CLAUDE.md in every
// hundredth package.
func benchWorkspace(b *testing.B, ws string, pkgs int) {
	b.Helper()
	for p := range pkgs {
		for d := range 10 {
			dir := filepath.Join(ws, "node_modules", fmt.Sprintf("pkg%04d", p), fmt.Sprintf("lib%d", d))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				b.Fatal(err)
			}
			for f := range 10 {
				os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.js", f)), []byte("module.exports = 1\n"), 0o644)
			}
		}
		if p%100 == 0 {
			os.WriteFile(filepath.Join(ws, "node_modules", fmt.Sprintf("pkg%04d", p), "CLAUDE.md"), []byte("a package's notes\n"), 0o644)
		}
	}
	os.WriteFile(filepath.Join(ws, "CLAUDE.md"), []byte("the project's notes\n"), 0o644)
}

// BenchmarkInstructionWalk is the walk of a workspace of 100,000 files in
// 10,000 directories (warm cache) without and with the last walk's index,
// find(1)'s walk of it, the start's walk and copy, and a tainted end's walk
// and comparison, both with the index (docs/performance.md).
func BenchmarkInstructionWalk(b *testing.B) {
	in, _ := instance.At(b.TempDir())
	ws := b.TempDir()
	s := &Session{Instance: in, Name: "bench", plan: &plan.Plan{Workspace: ws}}
	benchWorkspace(b, ws, 1000)
	time.Sleep(2500 * time.Millisecond) // past the window in which a directory is listed again
	b.Run("walk", func(b *testing.B) {
		for b.Loop() {
			if _, l := listInstructions(s.wsRoot(), nil, nil); len(l.Files) != 11 || len(l.Unchecked) != 0 {
				b.Fatalf("listed %+v", l)
			}
		}
	})
	prev, _ := listInstructions(s.wsRoot(), nil, nil)
	b.Run("walk-indexed", func(b *testing.B) {
		for b.Loop() {
			if _, l := listInstructions(s.wsRoot(), prev, nil); len(l.Files) != 11 || len(l.Unchecked) != 0 {
				b.Fatalf("listed %+v", l)
			}
		}
	})
	// The same tree's walk by find(1), for scale on a loaded machine.
	b.Run("find", func(b *testing.B) {
		for b.Loop() {
			if out, err := exec.Command("find", ws, "-name", "CLAUDE.md").Output(); err != nil || strings.Count(string(out), "\n") != 11 {
				b.Fatalf("find: %v\n%s", err, out)
			}
		}
	})
	if err := s.snapshotInstructions(); err != nil { // the index kept
		b.Fatal(err)
	}
	b.Run("start", func(b *testing.B) {
		for b.Loop() {
			if err := s.snapshotInstructions(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("end", func(b *testing.B) {
		for b.Loop() {
			if hold, problems := s.holdInstructions(); len(hold)+len(problems) != 0 {
				b.Fatalf("held %v, %q", hold, problems)
			}
		}
	})
}
