package layer

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/hobbs-agent/hobbs/src/safefile"
)

// A script the session made setuid, setgid and sticky is merged with its
// execute bits alone.
func TestMergeNeverSetuid(t *testing.T) {
	dir := t.TempDir()
	root := safefile.Beneath(dir)
	l, err := Create(root, "skills", "layers/s1/skills", "", Copy)
	if err != nil {
		t.Fatal(err)
	}
	up := filepath.Join(dir, l.Upper())
	write(t, filepath.Join(up, "new/run.sh"), "#!/bin/sh\necho new\n")
	if err := os.Chmod(filepath.Join(up, "new/run.sh"), 0o755|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky); err != nil {
		t.Fatal(err)
	}
	cs, err := l.Changes()
	if err != nil || len(cs) != 1 {
		t.Fatalf("changes %v %v", cs, err)
	}
	outs := Trees([]string{cs[0].Path}, l.Base(), DirTree{Root: root, Dir: "skills"}, l.Theirs(cs), nil)
	if err := Apply(root, "skills", outs); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "skills/new/run.sh")); err != nil || fi.Mode() != 0o755 {
		t.Fatalf("in effect with mode %v %v, want -rwxr-xr-x", fi.Mode(), err)
	}
}
