package provenance

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
)

// Kept contents live in packs: provenance/packs/N.pack, each the contents
// one change of the state kept, one after another. The state locates each
// content by its hash (objRef). A pack is written under a temporary name,
// synced and renamed before the state that names it is saved, so a crash
// leaves at most an unnamed temporary file; one file and one sync per
// session, whatever the number of contents.

type objRef struct {
	Pack int   `json:"p"`
	Off  int64 `json:"o"`
	Len  int64 `json:"n"`
}

type packWriter struct {
	s    *Store
	st   *state
	f    *os.File
	tmp  string
	off  int64
	refs map[string]objRef
}

func (s *Store) packPath(n int) string { return s.rel("packs", fmt.Sprintf("%d.pack", n)) }

// put adds b (whose hash is h) to the pack, unless the store keeps it.
func (w *packWriter) put(h string, b []byte) error {
	if _, ok := w.st.Objects[h]; ok {
		return nil
	}
	if _, ok := w.refs[h]; ok {
		return nil
	}
	if w.f == nil {
		w.tmp = w.s.rel("packs", ".tmp-"+rand.Text())
		f, err := w.s.Root.OpenFile(w.tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		w.f, w.refs = f, map[string]objRef{}
	}
	if _, err := w.f.Write(b); err != nil {
		return err
	}
	w.refs[h] = objRef{Pack: w.st.Packs + 1, Off: w.off, Len: int64(len(b))}
	w.off += int64(len(b))
	return nil
}

// finish syncs the pack, gives it its name and records its contents in the
// state.
func (w *packWriter) finish() error {
	if w.f == nil {
		return nil
	}
	err := w.f.Sync()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	w.f = nil
	if err == nil {
		err = w.s.Root.Rename(w.tmp, w.s.packPath(w.st.Packs+1))
	}
	if err != nil {
		_ = w.s.Root.Remove(w.tmp)
		return err
	}
	w.st.Packs++
	for h, r := range w.refs {
		w.st.Objects[h] = r
	}
	return nil
}

// abort removes an unfinished pack.
func (w *packWriter) abort() {
	if w.f != nil {
		w.f.Close()
		_ = w.s.Root.Remove(w.tmp)
		w.f = nil
	}
}

// errNotKept: the store keeps no copy of a content (prune forgot it, or
// it was never kept).
var errNotKept = errors.New("not kept")

// getObject returns the content kept under h, checked against it.
func (s *Store) getObject(st *state, h string) ([]byte, error) {
	if st.pack != nil {
		if r, ok := st.pack.refs[h]; ok && st.pack.f != nil {
			b := make([]byte, r.Len)
			if _, err := st.pack.f.ReadAt(b, r.Off); err == nil {
				return b, nil
			}
		}
	}
	r, ok := st.Objects[h]
	if !ok {
		return nil, fmt.Errorf("no copy of content %s is kept: %w", h, errNotKept)
	}
	f, err := s.Root.Open(s.packPath(r.Pack))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, r.Len)
	if _, err := f.ReadAt(b, r.Off); err != nil && err != io.EOF {
		return nil, err
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != h {
		return nil, fmt.Errorf("the copy of %s in pack %d is damaged", h, r.Pack)
	}
	return b, nil
}

// prune forgets the contents nothing refers to (neither the baseline nor
// a waiting change's before, nor a user-scope change's approved and not
// yet written, which may wait again; a decided change's before goes once
// nothing else refers to it, and review show then says so) and returns the packs that hold none of the
// rest, which the caller removes after it saves the state.
func (s *Store) prune(st *state) (unused []int) {
	used := map[string]bool{}
	for _, f := range st.Baseline {
		used[f.Hash] = true
	}
	for _, it := range st.Items {
		if it.Status == Waiting || it.Pending {
			used[it.Before] = true
		}
	}
	had, kept := map[int]bool{}, map[int]bool{}
	for h, r := range st.Objects {
		had[r.Pack] = true
		if !used[h] {
			delete(st.Objects, h)
			continue
		}
		kept[r.Pack] = true
	}
	for n := range had {
		if !kept[n] {
			unused = append(unused, n)
		}
	}
	return unused
}
