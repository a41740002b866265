//go:build unix

package safefile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

func all(string) bool { return true }

func entries(es []Entry) string {
	var out []string
	for _, e := range es {
		out = append(out, e.Rel+" "+e.Type.String())
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// Scan returns what keep keeps with its type from the directory, follows
// no link (a link to a directory outside is listed, not entered) and opens
// no FIFO.
func TestScanListsWithoutFollowing(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(outside, "CLAUDE.md"), []byte("outside"), 0o644)
	for _, d := range []string{"a/b", ".git/c"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	os.WriteFile(filepath.Join(dir, "a/b/f"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, ".git/c/h"), nil, 0o644)
	os.Symlink(outside, filepath.Join(dir, "a/out"))
	if err := syscall.Mkfifo(filepath.Join(dir, "a/fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, got, err := Beneath(dir).Scan(".", ScanLimits{MaxDepth: 10, MaxDirs: 100}, nil, func(rel string) bool { return rel != "a/b/f" })
	if err != nil {
		t.Fatal(err)
	}
	want := ".git/c/h ----------\na/fifo p---------\na/out L---------"
	if entries(got) != want {
		t.Errorf("scanned:\n%s\nwant:\n%s", entries(got), want)
	}
}

// Beyond its limits Scan walks nothing more and says what it left.
func TestScanLimits(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "d1/d2/d3/d4"), 0o755)
	os.WriteFile(filepath.Join(dir, "d1/d2/d3/deep"), nil, 0o644)
	for _, d := range []string{"w1", "w2", "w3", "w4"} {
		os.MkdirAll(filepath.Join(dir, "wide", d), 0o755)
		os.WriteFile(filepath.Join(dir, "wide", d, "f"), nil, 0o644)
	}
	_, found, err := Beneath(dir).Scan(".", ScanLimits{MaxDepth: 2, MaxDirs: 100}, nil, all)
	if !errors.Is(err, ErrTooDeep) || !strings.Contains(err.Error(), "d1/d2/d3") {
		t.Errorf("too deep: %v", err)
	}
	if len(found) != 4 {
		t.Errorf("found %v", found)
	}
	_, found, err = Beneath(dir).Scan(".", ScanLimits{MaxDepth: 10, MaxDirs: 4}, nil, all)
	if !errors.Is(err, ErrTooMany) || !strings.Contains(err.Error(), "more directories") {
		t.Errorf("too many: %v", err)
	}
	if len(found) >= 5 {
		t.Errorf("found %v: the cap did not stop the walk", found)
	}
	if _, found, err := Beneath(dir).Scan(".", ScanLimits{MaxDepth: 10, MaxDirs: 100}, nil, all); err != nil || len(found) != 5 {
		t.Errorf("found %v, %v", found, err)
	}
}

// Given the last walk's index, Scan lists again only the directories
// that changed since, and finds what was added, removed, renamed or
// swapped for a link there, at any depth; the index survives its encoding.
func TestScanIndexSeesChanges(t *testing.T) {
	defer func(s time.Duration) { racySlop = s }(racySlop)
	racySlop = 0
	dir, outside := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(outside, "CLAUDE.md"), nil, 0o644)
	for _, d := range []string{"a/b/c", "x/y", "keep/k", "swap/s"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	os.WriteFile(filepath.Join(dir, "x/y/CLAUDE.md"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, "swap/s/CLAUDE.md"), nil, 0o644)
	keep := func(rel string) bool { return filepath.Base(rel) == "CLAUDE.md" }
	lim := ScanLimits{MaxDepth: 10, MaxDirs: 100}
	r := Beneath(dir)
	time.Sleep(50 * time.Millisecond) // past the clock's tick
	idx, found, err := r.Scan(".", lim, nil, keep)
	if err != nil || entries(found) != "swap/s/CLAUDE.md ----------\nx/y/CLAUDE.md ----------" {
		t.Fatalf("first walk: %s %v", entries(found), err)
	}
	b, _ := idx.MarshalBinary()
	var prev DirIndex
	if err := prev.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	// Nothing changed: nothing listed again.
	again, found, err := r.Scan(".", lim, &prev, keep)
	if err != nil || entries(found) != "swap/s/CLAUDE.md ----------\nx/y/CLAUDE.md ----------" {
		t.Fatalf("unchanged walk: %s %v", entries(found), err)
	}
	for rel, d := range again.dirs {
		if d != prev.dirs[rel] {
			t.Errorf("%s was listed again though it did not change", rel)
		}
	}
	time.Sleep(50 * time.Millisecond)
	os.WriteFile(filepath.Join(dir, "a/b/c/CLAUDE.md"), nil, 0o644)
	os.Remove(filepath.Join(dir, "x/y/CLAUDE.md"))
	os.MkdirAll(filepath.Join(dir, "a/new/deep"), 0o755)
	os.WriteFile(filepath.Join(dir, "a/new/deep/CLAUDE.md"), nil, 0o644)
	os.Rename(filepath.Join(dir, "swap"), filepath.Join(dir, "swapped"))
	os.Symlink(outside, filepath.Join(dir, "swap"))
	os.Symlink(outside, filepath.Join(dir, "keep/k/CLAUDE.md"))
	_, found, err = r.Scan(".", lim, &prev, keep)
	want := "a/b/c/CLAUDE.md ----------\na/new/deep/CLAUDE.md ----------\nkeep/k/CLAUDE.md L---------\nswapped/s/CLAUDE.md ----------"
	if err != nil || entries(found) != want {
		t.Errorf("after the changes:\n%s\nwant:\n%s\n%v", entries(found), want, err)
	}
}

// A directory changed as it was listed is listed again next time, even
// when its change time did not move.
func TestScanRacyListedAgain(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "a"), 0o755)
	idx, _, err := Beneath(dir).Scan(".", ScanLimits{MaxDepth: 10, MaxDirs: 100}, nil, all)
	if err != nil {
		t.Fatal(err)
	}
	if !idx.dirs["a"].racy {
		t.Fatal("a directory made just now is not racy")
	}
	again, _, _ := Beneath(dir).Scan(".", ScanLimits{MaxDepth: 10, MaxDirs: 100}, idx, all)
	if again.dirs["a"] == idx.dirs["a"] {
		t.Error("a racy directory was not listed again")
	}
}

// A damaged index is refused, never half read.
func TestScanIndexDamaged(t *testing.T) {
	for _, b := range []string{"", "x\x00", "dirindex1\x00S\x00a\x00", "dirindex1\x00D\x00.\x00x\x001\x000\x00", "dirindex1\x00D\x00.\x001\x00", "dirindex1\x00K\x00"} {
		var x DirIndex
		if err := x.UnmarshalBinary([]byte(b)); err == nil {
			t.Errorf("%q: accepted", b)
		}
	}
}

// On a file system whose change times Scan does not trust, it lists every
// directory whatever the index says.
func TestScanIndexUntrustedFileSystem(t *testing.T) {
	defer func(s time.Duration, f func(string) bool) { racySlop, ctimeTrusted = s, f }(racySlop, ctimeTrusted)
	racySlop = 0
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "a/b"), 0o755)
	time.Sleep(50 * time.Millisecond)
	lim := ScanLimits{MaxDepth: 10, MaxDirs: 100}
	idx, _, err := Beneath(dir).Scan(".", lim, nil, all)
	if err != nil {
		t.Fatal(err)
	}
	if again, _, _ := Beneath(dir).Scan(".", lim, idx, all); again.dirs["a/b"] != idx.dirs["a/b"] {
		t.Fatal("on a trusted file system an unchanged directory was listed again")
	}
	ctimeTrusted = func(string) bool { return false }
	again, _, _ := Beneath(dir).Scan(".", lim, idx, all)
	for rel, d := range again.dirs {
		if d == idx.dirs[rel] {
			t.Errorf("%s was taken from the index on an untrusted file system", rel)
		}
	}
}

// Directories First names are walked before their siblings, so a tree
// padded with directories listed before them cannot push them past
// MaxDirs; without First the padding does.
func TestScanFirstBeforeTheCap(t *testing.T) {
	dir := t.TempDir()
	for i := range 50 {
		os.MkdirAll(filepath.Join(dir, fmt.Sprintf("pad%02d", i)), 0o755)
	}
	os.MkdirAll(filepath.Join(dir, ".claude", "skills", "s"), 0o755)
	os.WriteFile(filepath.Join(dir, ".claude", "skills", "s", "SKILL.md"), nil, 0o644)
	skill := func(found []Entry) bool {
		return slices.ContainsFunc(found, func(e Entry) bool { return e.Rel == ".claude/skills/s/SKILL.md" })
	}
	lim := ScanLimits{MaxDepth: 10, MaxDirs: 10}
	if _, _, err := Beneath(dir).Scan(".", lim, nil, all); !errors.Is(err, ErrTooMany) {
		t.Fatalf("the padding did not reach the cap: %v", err)
	}
	lim.First = func(rel string) bool { return rel == ".claude" || strings.HasPrefix(rel, ".claude/") }
	_, found, err := Beneath(dir).Scan(".", lim, nil, all)
	if !errors.Is(err, ErrTooMany) || !skill(found) {
		t.Errorf("found %v, %v: the first directory was left out", found, err)
	}
}

// Directories Defer names are walked after all the others, so padding
// made of them cannot push the others past MaxDirs; what is left out is
// in Unwalked, deep ones too.
func TestScanDeferredLeftOut(t *testing.T) {
	dir := t.TempDir()
	for i := range 50 {
		os.MkdirAll(filepath.Join(dir, "x", fmt.Sprintf("pad%02d", i), "sub"), 0o755)
	}
	os.MkdirAll(filepath.Join(dir, "y", "z", "deep"), 0o755)
	os.WriteFile(filepath.Join(dir, "y", "z", "CLAUDE.md"), nil, 0o644)
	lim := ScanLimits{MaxDepth: 2, MaxDirs: 10, Defer: func(rel string) bool { return strings.Contains(rel, "pad") }}
	idx, found, err := Beneath(dir).Scan(".", lim, nil, all)
	if !errors.Is(err, ErrTooMany) || !errors.Is(err, ErrTooDeep) || len(found) != 1 || found[0].Rel != "y/z/CLAUDE.md" {
		t.Fatalf("found %v, %v", found, err)
	}
	un := idx.Unwalked()
	if !slices.Contains(un, "y/z/deep") || !idx.Has("y/z") || idx.Has("y/z/deep") {
		t.Errorf("unwalked %v", un)
	}
	walked := 0
	for i := range 50 {
		p := fmt.Sprintf("x/pad%02d", i)
		switch {
		case idx.Has(p):
			walked++
		case !slices.Contains(un, p):
			t.Errorf("%s neither walked nor unwalked", p)
		}
	}
	// ".", x, y, y/z and six of the padding.
	if walked != 6 {
		t.Errorf("%d of the padding walked", walked)
	}
}
