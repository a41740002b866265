//go:build unix

package safefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
)

// Scan lists every entry with its type from the directory, follows no
// link (a link to a directory outside is listed, not entered), opens no
// FIFO, and skips what visit skips.
func TestScanListsWithoutFollowing(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(outside, "CLAUDE.md"), []byte("outside"), 0o644)
	for _, d := range []string{"a/b", "skip/x", ".git/c"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	os.WriteFile(filepath.Join(dir, "a/b/f"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, "skip/x/g"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, ".git/c/h"), nil, 0o644)
	os.Symlink(outside, filepath.Join(dir, "a/out"))
	if err := syscall.Mkfifo(filepath.Join(dir, "a/fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	var got []string
	err := Beneath(dir).Scan(".", ScanLimits{MaxDepth: 10, MaxDirs: 100}, func(rel string, typ fs.FileMode, err error) error {
		if err != nil {
			t.Errorf("%s: %v", rel, err)
		}
		got = append(got, rel+" "+typ.String())
		if rel == "skip" {
			return fs.SkipDir
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(got)
	want := []string{".git d---------", ".git/c d---------", ".git/c/h ----------", "a d---------", "a/b d---------", "a/b/f ----------",
		"a/fifo p---------", "a/out L---------", "skip d---------"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("scanned:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Beyond its limits Scan walks nothing more and says what it left.
func TestScanLimits(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "d1/d2/d3/d4"), 0o755)
	for _, d := range []string{"w1", "w2", "w3", "w4"} {
		os.MkdirAll(filepath.Join(dir, "wide", d), 0o755)
		os.WriteFile(filepath.Join(dir, "wide", d, "f"), nil, 0o644)
	}
	count := func(lim ScanLimits) (int, error) {
		n := 0
		err := Beneath(dir).Scan(".", lim, func(string, fs.FileMode, error) error { n++; return nil })
		return n, err
	}
	n, err := count(ScanLimits{MaxDepth: 2, MaxDirs: 100})
	if !errors.Is(err, ErrTooDeep) || !strings.Contains(err.Error(), "d1/d2/d3") {
		t.Errorf("too deep: %v", err)
	}
	if n != 3+1+4+4 { // d1 d2 d3 (listed, not entered), wide, w1..w4, their f
		t.Errorf("visited %d", n)
	}
	n, err = count(ScanLimits{MaxDepth: 10, MaxDirs: 4})
	if !errors.Is(err, ErrTooMany) || !strings.Contains(err.Error(), "more directories") {
		t.Errorf("too many: %v", err)
	}
	if n >= 13 {
		t.Errorf("visited %d: the cap did not stop the walk", n)
	}
	if _, err := count(ScanLimits{MaxDepth: 10, MaxDirs: 100}); err != nil {
		t.Error(err)
	}
}
