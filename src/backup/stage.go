package backup

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/layer"
	"golang.org/x/sys/unix"
)

// A sync's staging. Sync reads another device's snapshot with one restic
// call, `restic dump --archive tar SNAPSHOT PATH`: the snapshot's files as
// a tar stream, read here, never unpacked by a tool. Of the parts a sync
// reads (syncParts), only the files that differ from the base the last
// sync from that device kept are written in the staging directory; of the
// parts read whole (the vault, the review list, the policy) the others
// are hard links to the base's. The merge reads a share of the snapshot
// as the staged file where it changed and the base's elsewhere
// (overlay), and the kept base becomes the snapshot by taking the changed
// files in place (keepBase). So the paths that differ from the base are
// known without comparing two trees again, and a sync writes, links and
// removes in proportion to what changed, not to the instance.
// (A restic restore of only the changed paths would need one --include
// pattern per path, which restic matches against every file of the
// snapshot, and a restic diff the base snapshot, which the other device's
// retention has usually forgotten.)

// staged is a snapshot staged for a sync.
type staged struct {
	// Dir is the staged instance directory: whole without a base; with
	// one, the sparse parts hold only the files in Changed.
	Dir string
	// Changed are the paths (slash, relative to the instance) whose file
	// differs from the base: written here, or the base's and not in the
	// snapshot. With no base, every file staged.
	Changed []string
	// Problems are the entries of the snapshot not staged, each with why.
	Problems []string
}

// stageSnapshot stages the parts of snap a sync reads into dir (made
// here), against the instance directory base ("": none). Only
// directories and regular files are made, each at a path checked to be
// relative, clean and below a part a sync reads; every directory on the
// way is one this made, so nothing written follows a link. A file of
// base is read without following a link and linked only when it is a
// regular file.
func stageSnapshot(ctx context.Context, r *Restic, snap Snapshot, base, dir string) (*staged, error) {
	if len(snap.Paths) != 1 {
		return nil, errs.Failf("snapshot %s holds %d paths, not one instance", snap.ShortID, len(snap.Paths))
	}
	p := snap.Paths[0]
	if !filepath.IsAbs(p) || filepath.Clean(p) != p || p == "/" {
		return nil, errs.Failf("snapshot %s holds the path %q, not an instance directory", snap.ShortID, p)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, errs.Wrap(errs.Failure, err, "create the staging directory %s", dir)
	}
	st := &stager{snap: snap, base: base, dir: dir, out: &staged{Dir: dir}, seen: map[string]bool{}, baseDirs: map[string]bool{}, told: map[string]bool{}}
	prefix := strings.TrimPrefix(filepath.ToSlash(p), "/") + "/"
	nc := *r
	nc.NoCache = true
	err := nc.read(ctx, func(out io.Reader) error { return st.read(tar.NewReader(out), prefix) },
		"dump", "--archive", "tar", snap.ID, p)
	if err != nil {
		return nil, err
	}
	if base != "" {
		if err := st.removed(); err != nil {
			return nil, errs.Wrap(errs.Failure, err, "compare snapshot %s with the base", snap.ShortID)
		}
	}
	sort.Strings(st.out.Changed)
	return st.out, nil
}

type stager struct {
	snap      Snapshot
	base, dir string
	out       *staged
	seen      map[string]bool
	baseDirs  map[string]bool // directories of base checked: true a directory
	told      map[string]bool // what host tools act on, reported
}

// hostTrusted is what host tools act on in rel (slash, relative to the
// instance): the first component of rel that instance.HostTrusted names,
// the path up to it, and why; "" when none. A sync takes none of it, as
// a session's layer merge and the shares' neutralising do not (a .git
// runs its hooks on the next git status there, an .envrc is loaded by
// direnv).
func hostTrusted(rel string) (at, why string) {
	for i, c := range strings.Split(rel, "/") {
		if w, ok := instance.HostTrusted[c]; ok {
			return strings.Join(strings.Split(rel, "/")[:i+1], "/"), "a " + c + ": " + w
		}
	}
	return "", ""
}

// syncPart reports whether rel (slash, relative to the instance) is in a
// part a sync reads, and not what a merge never takes (derived) or what
// host tools act on (hostTrusted).
func syncPart(rel string) bool {
	if at, _ := hostTrusted(rel); at != "" {
		return false
	}
	top, below, _ := strings.Cut(rel, "/")
	for _, p := range syncParts {
		if top == p {
			return below == "" || !derived(below)
		}
	}
	return false
}

func (st *stager) problem(format string, a ...any) {
	st.out.Problems = append(st.out.Problems, fmt.Sprintf(format, a...))
}

// read stages the entries of the tar stream below prefix.
func (st *stager) read(tr *tar.Reader, prefix string) error {
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return errs.Wrap(errs.Failure, err, "read snapshot %s", st.snap.ShortID)
		}
		rel, ok := strings.CutPrefix(h.Name, prefix)
		rel = strings.TrimSuffix(rel, "/")
		if !ok || rel == "" {
			continue
		}
		if !fs.ValidPath(rel) {
			st.problem("%q in the snapshot of %s is not a path below the instance: not taken", h.Name, st.snap.Device)
			continue
		}
		if top, _, _ := strings.Cut(rel, "/"); !slices.Contains(syncParts, top) {
			continue
		}
		if at, why := hostTrusted(rel); at != "" {
			if !st.told[at] {
				st.told[at] = true
				st.problem("%s in the snapshot of %s is %s: not taken", at, st.snap.Device, why)
			}
			continue
		}
		if !syncPart(rel) {
			continue
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if st.base != "" && sparse(rel) {
				continue // made for the files written below it
			}
			if err := os.MkdirAll(st.path(st.dir, rel), 0o700); err != nil {
				return errs.Wrap(errs.Failure, err, "stage %s", rel)
			}
		case tar.TypeReg:
			if h.Size > layer.MaxFile {
				// Seen, as the entries below: not taken, nor a removal of
				// the base's file.
				st.seen[rel] = true
				st.problem("%s in the snapshot of %s is larger than %d bytes: not taken", rel, st.snap.Device, layer.MaxFile)
				continue
			}
			data, err := io.ReadAll(io.LimitReader(tr, h.Size))
			if err != nil {
				return errs.Wrap(errs.Failure, err, "read %s of snapshot %s", rel, st.snap.ShortID)
			}
			if err := st.file(rel, data); err != nil {
				return errs.Wrap(errs.Failure, err, "stage %s", rel)
			}
		default:
			st.seen[rel] = true
			st.problem("%s in the snapshot of %s is not a regular file: not taken", rel, st.snap.Device)
		}
	}
}

func (st *stager) path(root, rel string) string { return filepath.Join(root, filepath.FromSlash(rel)) }

// sparseParts are the shares a staging against a base holds only the
// changed files of: the merge reads them by path (overlay), and the kept
// base takes those files in place (keepBase). The other parts are read
// whole (the vault, the review list, the policy) and staged whole.
var sparseParts = []string{"memory", "playbooks", "skills", "agents"}

func sparse(rel string) bool {
	top, _, _ := strings.Cut(rel, "/")
	return slices.Contains(sparseParts, top)
}

// file stages the file rel: when the same as the base's, nothing in a
// sparse part, else a link to it; else written.
func (st *stager) file(rel string, data []byte) error {
	st.seen[rel] = true
	to := st.path(st.dir, rel)
	if st.base != "" {
		if same, err := st.sameAsBase(rel, data); err == nil && same {
			if sparse(rel) {
				return nil
			}
			if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
				return err
			}
			if os.Link(st.path(st.base, rel), to) == nil {
				return nil
			}
			// Not linkable (another filesystem): written.
			return writeNew(to, data)
		}
	}
	st.out.Changed = append(st.out.Changed, rel)
	if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
		return err
	}
	return writeNew(to, data)
}

// sameAsBase reports whether base holds rel as a regular file with data,
// following no link.
func (st *stager) sameAsBase(rel string, data []byte) (bool, error) {
	for d := path.Dir(rel); d != "."; d = path.Dir(d) {
		ok, known := st.baseDirs[d]
		if !known {
			fi, err := os.Lstat(st.path(st.base, d))
			ok = err == nil && fi.IsDir()
			// Every directory above d is checked on the way up.
			st.baseDirs[d] = ok
		}
		if !ok {
			return false, nil
		}
	}
	f, err := os.OpenFile(st.path(st.base, rel), os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != int64(len(data)) {
		return false, err
	}
	b := make([]byte, len(data)+1)
	n, err := io.ReadFull(f, b)
	if !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return false, err
	}
	return bytes.Equal(b[:n], data), nil
}

// writeNew creates the file p (none there) with data.
func writeNew(p string, data []byte) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// removed adds to the changed paths the regular files of base's sync
// parts that the snapshot does not hold (no link followed).
func (st *stager) removed() error {
	for _, part := range syncParts {
		top := filepath.Join(st.base, part)
		err := filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) && p == top {
					return nil
				}
				return err
			}
			rel, _ := filepath.Rel(st.base, p)
			rel = filepath.ToSlash(rel)
			if !syncPart(rel) {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.Type().IsRegular() && !st.seen[rel] {
				st.out.Changed = append(st.out.Changed, rel)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
