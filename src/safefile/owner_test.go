//go:build unix

package safefile

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRootGivesWhatItMakes: run as root beneath another user's directory,
// every file and directory the layer creates — by Write, Create, Append,
// Lock, OpenFile with O_CREATE, Mkdir and MkdirAll — belongs to that user,
// and a file of root's already there (a hard link planted to one, say) is
// opened but never given away. Beneath root's own directory nothing
// changes hands.
func TestRootGivesWhatItMakes(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	const uid, gid = 4242, 4343
	dir := t.TempDir()
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "roots"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := Beneath(dir)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(r.MkdirAll("a/b/c", 0o755))
	must(r.Mkdir("d", 0o755))
	must(r.Write("a/b/c/w.txt", []byte("w"), 0o644))
	must(r.Write("a/b/c/w.txt", []byte("again"), 0o644)) // a new inode over the old
	must(r.Create("d/c.txt", []byte("c"), 0o644))
	must(r.Append("d/log", []byte("line\n"), 0o644))
	unlock, err := r.Lock("d/.lock", 0)
	must(err)
	unlock()
	f, err := r.OpenFile("o.txt", os.O_WRONLY|os.O_CREATE, 0o644)
	must(err)
	f.Close()
	f, err = r.OpenFile("roots", os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	must(err)
	f.Close()

	n := 0
	must(filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		must(err)
		var st unix.Stat_t
		must(unix.Lstat(p, &st))
		want := [2]uint32{uid, gid}
		if filepath.Base(p) == "roots" {
			want = [2]uint32{0, 0}
		}
		if got := [2]uint32{st.Uid, st.Gid}; got != want {
			t.Errorf("%s: owned by %d:%d, want %d:%d", p, got[0], got[1], want[0], want[1])
		}
		n++
		return nil
	}))
	if n < 11 {
		t.Errorf("walked %d entries, want every one made above", n)
	}

	// Beneath root's own directory, root keeps what it makes.
	own := t.TempDir()
	must(Beneath(own).Write("y", []byte("y"), 0o644))
	var st unix.Stat_t
	must(unix.Lstat(filepath.Join(own, "y"), &st))
	if st.Uid != 0 {
		t.Errorf("root's own directory: %d", st.Uid)
	}
}
