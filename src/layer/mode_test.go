package layer

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/hobbs-agent/hobbs/src/safefile"
)

func chmod(t *testing.T, p string, m fs.FileMode) {
	t.Helper()
	if err := os.Chmod(p, m); err != nil {
		t.Fatal(err)
	}
}

func modeOf(t *testing.T, p string) fs.FileMode {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()
}

// A script the session made, or made runnable, keeps its execute bits
// through the three-way merge, and only those: never setuid, setgid or
// sticky.
func TestMergeKeepsExecBit(t *testing.T) {
	dir := t.TempDir()
	root := safefile.Beneath(dir)
	write(t, filepath.Join(dir, "skills/old/run.sh"), "#!/bin/sh\necho old\n")
	write(t, filepath.Join(dir, "skills/plain/notes.md"), "notes\n")
	l, err := Create(root, "skills", "layers/s1/skills", "", Copy)
	if err != nil {
		t.Fatal(err)
	}
	up := filepath.Join(dir, l.Upper())
	write(t, filepath.Join(up, "new/run.sh"), "#!/bin/sh\necho new\n")
	chmod(t, filepath.Join(up, "new/run.sh"), 0o755|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)
	chmod(t, filepath.Join(up, "old/run.sh"), 0o755) // made runnable, text unchanged
	write(t, filepath.Join(up, "plain/notes.md"), "notes\nmore\n")
	if got, want := changes(t, l), "new/run.sh:false:;old/run.sh:false:;plain/notes.md:false:;"; got != want {
		t.Fatalf("changes %s, want %s", got, want)
	}
	cs, _ := l.Changes()
	var paths []string
	for _, c := range cs {
		paths = append(paths, c.Path)
	}
	outs := Trees(paths, l.Base(), DirTree{Root: root, Dir: "skills"}, l.Theirs(cs), nil)
	if err := Apply(root, "skills", outs); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]fs.FileMode{"new/run.sh": 0o755, "old/run.sh": 0o755, "plain/notes.md": 0o644} {
		if got := modeOf(t, filepath.Join(dir, "skills", p)); got != want {
			t.Errorf("%s: mode %v, want %v", p, got, want)
		}
	}
}

// Both sides changed a script: the text merges line-wise, the execute bit
// three-way (the side that changed it wins).
func TestMerge3ExecBit(t *testing.T) {
	base := Version{Data: []byte("a\nb\nc\n"), Exists: true}
	ours := Version{Data: []byte("A\nb\nc\n"), Exists: true}
	theirs := Version{Data: []byte("a\nb\nC\n"), Exists: true, Exec: true}
	m, ok := Merge3(base, ours, theirs, nil)
	if !ok || string(m.Data) != "A\nb\nC\n" || !m.Exec {
		t.Fatalf("merged %q exec %v ok %v", m.Data, m.Exec, ok)
	}
	base.Exec, ours.Exec, theirs.Exec = true, false, true
	if m, ok := Merge3(base, ours, theirs, nil); !ok || m.Exec {
		t.Fatalf("ours made it not runnable, theirs left it: exec %v ok %v", m.Exec, ok)
	}
	// Only the mode changed on their side.
	if m, ok := Merge3(Version{Data: []byte("x\n"), Exists: true}, Version{Data: []byte("x\n"), Exists: true},
		Version{Data: []byte("x\n"), Exists: true, Exec: true}, nil); !ok || !m.Exec {
		t.Fatalf("a change of mode alone was lost: exec %v ok %v", m.Exec, ok)
	}
}
