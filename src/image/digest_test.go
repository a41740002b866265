package image

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A binary's digest is kept with its identity and used while the file is
// the one hashed; a change of the file, or a file changed just before its
// hash, is hashed again.
func TestBinaryDigest(t *testing.T) {
	cache := digestCacheFile()
	os.Remove(cache)
	bin := filepath.Join(t.TempDir(), "hobbs")
	write := func(s string) {
		if err := os.WriteFile(bin, []byte(s), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	digest := func(want string) []byte {
		t.Helper()
		got, err := binaryDigest(bin)
		if err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256([]byte(want)); !bytes.Equal(got, sum[:]) {
			t.Fatalf("digest %x, want that of %q", got, want)
		}
		return got
	}
	write("binary-1")
	digest("binary-1")
	if b, _ := os.ReadFile(cache); strings.Contains(string(b), bin) {
		t.Fatalf("a file changed just now was kept: %s", b)
	}
	digestNow = func() time.Time { return time.Now().Add(time.Hour) }
	t.Cleanup(func() { digestNow = time.Now })
	digest("binary-1")
	b, err := os.ReadFile(cache)
	if err != nil || !strings.Contains(string(b), bin) {
		t.Fatalf("the digest was not kept: %s, %v", b, err)
	}
	// The kept digest is what is used: replaced by zeros here.
	line := strings.TrimSpace(string(b))
	forged := line[:len(line)-64] + strings.Repeat("0", 64)
	if err := os.WriteFile(cache, []byte(forged+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, _ := binaryDigest(bin); !bytes.Equal(got, make([]byte, 32)) {
		t.Fatalf("the kept digest was not used: %x", got)
	}
	// Any change of the file (here its size; a write in place also
	// changes its change time) is hashed again, and kept in place of the
	// old line.
	write("binary-22")
	digest("binary-22")
	if b, _ := os.ReadFile(cache); strings.Count(string(b), bin) != 1 {
		t.Fatalf("cache: %s", b)
	}
	// A cache that does not parse is only a hash more.
	os.WriteFile(cache, []byte("garbage\n\"x\" 1 2\n"), 0o600)
	digest("binary-22")
	if _, err := binaryDigest(filepath.Dir(bin)); err == nil {
		t.Error("a directory was hashed")
	}
}
