package image

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/adrg/xdg"
	"golang.org/x/sys/unix"
)

// A launcher checks at every run that the image holds its own binary, and
// hashing tens of megabytes is a noticeable part of a session's start on a
// small machine. binaryDigest keeps each binary's SHA-256 in the user's
// cache directory with the file's identity: device, inode, size,
// modification and change time. Any write to the file changes its change
// time, which no process can set, so a digest is used only while the file
// is the one that was hashed. A file changed within digestRacy of its hash
// is not kept: a write in the same tick of the file system's clock would
// leave its identity as it was. The cache is the user's own (no session
// mounts it); a cache that cannot be read or written only costs a hash.

// digestCacheFile is where the digests are kept.
func digestCacheFile() string { return filepath.Join(xdg.CacheHome, "hobbs", "binary-digests") }

// digestRacy: a file changed this close to its hash is hashed again next
// time (by digestNow's clock).
const digestRacy = 2 * time.Second

var digestNow = time.Now

// digestCacheSize is how many binaries' digests the cache keeps (a user
// may run several builds side by side).
const digestCacheSize = 8

// binaryDigest returns the SHA-256 of the regular file at path.
func binaryDigest(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	id := fileIdentity(abs, &st)
	lines := readDigestCache()
	for _, l := range lines {
		if rest, ok := strings.CutPrefix(l, id); ok {
			if sum, err := hex.DecodeString(rest); err == nil && len(sum) == sha256.Size {
				return sum, nil
			}
		}
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, err
	}
	sum := h.Sum(nil)
	// The identity read before the hash still holds, and is old enough.
	var after unix.Stat_t
	if unix.Fstat(int(f.Fd()), &after) == nil && fileIdentity(abs, &after) == id &&
		digestNow().Sub(time.Unix(after.Ctim.Unix())) > digestRacy {
		writeDigestCache(id+hex.EncodeToString(sum), abs, lines)
	}
	return sum, nil
}

// fileIdentity is a cache line's first part: the path's identity, then
// the digest follows.
func fileIdentity(abs string, st *unix.Stat_t) string {
	return fmt.Sprintf("%s %d %d %d %d %d ", strconv.Quote(abs), st.Dev, st.Ino, st.Size, st.Mtim.Nano(), st.Ctim.Nano())
}

func readDigestCache() []string {
	b, err := os.ReadFile(digestCacheFile())
	if err != nil || len(b) > 64<<10 {
		return nil
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

// writeDigestCache puts line first, drops the older lines of the same
// path, keeps digestCacheSize lines, and replaces the file atomically.
func writeDigestCache(line, abs string, old []string) {
	lines := []string{line}
	prefix := strconv.Quote(abs) + " "
	for _, l := range old {
		if !strings.HasPrefix(l, prefix) && len(lines) < digestCacheSize {
			lines = append(lines, l)
		}
	}
	p := digestCacheFile()
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".binary-digests-*")
	if err != nil {
		return
	}
	_, werr := tmp.WriteString(strings.Join(lines, "\n") + "\n")
	if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), p) != nil {
		os.Remove(tmp.Name())
	}
}
