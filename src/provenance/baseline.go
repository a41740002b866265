package provenance

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strconv"
)

// The baseline (each watched file's state) and the object index (where
// each kept content is in the packs) hold an entry per file, tens of
// thousands on a large memory; every session's start and end reads them
// and its start writes the state. They live in provenance/baselines/N, a
// line-per-entry text file that is cheap to read and write, not in
// state.json: a save writes a new generation (synced) only when they
// changed, then state.json naming it (atomically), then removes the one
// before, so a crash leaves state.json naming a whole file.
//
//	hobbs-provenance-baseline 1
//	b HASH SIZE INO CTIME MTIME MODE RACY "PATH"
//	o HASH PACK OFFSET LENGTH

const baselineHeader = "hobbs-provenance-baseline 1\n"

func (s *Store) baselinePath(n int) string { return s.rel("baselines", strconv.Itoa(n)) }

// encodeBaseline renders the baseline and object index, sorted.
func encodeBaseline(st *state) []byte {
	paths := make([]string, 0, len(st.Baseline))
	for p := range st.Baseline {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	hashes := make([]string, 0, len(st.Objects))
	for h := range st.Objects {
		hashes = append(hashes, h)
	}
	sort.Strings(hashes)
	b := make([]byte, 0, len(baselineHeader)+len(paths)*160+len(hashes)*96)
	b = append(b, baselineHeader...)
	for _, p := range paths {
		f := st.Baseline[p]
		b = append(b, "b "...)
		b = append(b, f.Hash...)
		b = appendFacts(b, f, f.Racy)
		b = strconv.AppendQuote(b, p)
		b = append(b, '\n')
	}
	for _, h := range hashes {
		r := st.Objects[h]
		b = append(b, "o "...)
		b = append(b, h...)
		for _, n := range []int64{int64(r.Pack), r.Off, r.Len} {
			b = append(b, ' ')
			b = strconv.AppendInt(b, n, 10)
		}
		b = append(b, '\n')
	}
	return b
}

// decodeBaseline reads what encodeBaseline wrote into st.
func decodeBaseline(data []byte, st *state) error {
	rest, ok := bytes.CutPrefix(data, []byte(baselineHeader))
	if !ok {
		return errors.New("not a baseline file")
	}
	// Sized up front: the maps hold an entry a line.
	if len(st.Baseline) == 0 {
		st.Baseline = make(map[string]fileState, bytes.Count(data, []byte("\nb ")))
	}
	if len(st.Objects) == 0 {
		st.Objects = make(map[string]objRef, bytes.Count(data, []byte("\no ")))
	}
	for n := 2; len(rest) > 0; n++ {
		line, next, _ := bytes.Cut(rest, []byte("\n"))
		rest = next
		bad := func(why string) error { return fmt.Errorf("line %d: %s", n, why) }
		if len(line) < 2 || line[1] != ' ' {
			return bad("no entry")
		}
		kind, f := line[0], line[2:]
		var hash string
		var err error
		hash, f = field(f)
		switch kind {
		case 'b':
			var nums [6]int64
			if f, err = numbers(f, nums[:]); err != nil {
				return bad(err.Error())
			}
			p, err := strconv.Unquote(string(f))
			if err != nil || p == "" {
				return bad("the path")
			}
			st.Baseline[p] = fileState{Hash: hash, Size: nums[0], Ino: uint64(nums[1]), Ctime: nums[2], Mtime: nums[3],
				Mode: uint32(nums[4]), Racy: nums[5] == 1}
		case 'o':
			var nums [3]int64
			if f, err = numbers(f, nums[:]); err != nil {
				return bad(err.Error())
			}
			if len(f) != 0 {
				return bad("trailing text")
			}
			st.Objects[hash] = objRef{Pack: int(nums[0]), Off: nums[1], Len: nums[2]}
		default:
			return bad("unknown entry")
		}
	}
	return nil
}

// numbers parses len(into) space-separated integers off b and returns
// what follows them.
func numbers(b []byte, into []int64) ([]byte, error) {
	for i := range into {
		var tok string
		tok, b = field(b)
		v, err := strconv.ParseInt(tok, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("a number: %v", err)
		}
		into[i] = v
	}
	return b, nil
}

// field splits the first space-separated field off b.
func field(b []byte) (string, []byte) {
	tok, rest, _ := bytes.Cut(b, []byte(" "))
	return string(tok), rest
}

// readBaseline reads the generation state.json names into st, lazy: decode
// decodes it when it is needed.
func (s *Store) readBaseline(st *state) error {
	if st.BaselineGen == 0 {
		return nil
	}
	p := s.baselinePath(st.BaselineGen)
	b, err := s.Root.ReadFile(p, maxState)
	if err == nil && len(b) > maxState {
		err = errors.New("too large")
	}
	if err == nil && !bytes.HasPrefix(b, []byte(baselineHeader)) {
		err = errors.New("not a baseline file")
	}
	if err != nil {
		return cannotRead(p, err)
	}
	st.baselineRaw, st.lazy = b, true
	return nil
}

// sameAsBaseline reports whether l is what the baseline file raw records:
// the same watched files, each with the same inode facts, none of them
// racy, so that no content needs reading. It compares raw's lines as
// encodeBaseline writes them, without decoding them.
func sameAsBaseline(raw []byte, l *listing) bool {
	if l.err != nil {
		return false
	}
	if raw == nil {
		return len(l.files) == 0
	}
	rest, ok := bytes.CutPrefix(raw, []byte(baselineHeader))
	if !ok {
		return false
	}
	at := make(map[string]int, len(l.files))
	for i, f := range l.files {
		if f.fst.Racy {
			return false
		}
		at[f.rel] = i
	}
	var want []byte
	seen := make([]bool, len(l.files))
	for bytes.HasPrefix(rest, []byte("b ")) {
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte("\n"))
		// b HASH SIZE INO CTIME MTIME MODE RACY "PATH"; only the path is
		// quoted.
		sp := bytes.IndexByte(line[2:], ' ')
		q := bytes.IndexByte(line, '"')
		if sp < 0 || q < 2+sp {
			return false
		}
		i, found := lookup(at, line[q:])
		if !found || seen[i] {
			return false
		}
		seen[i] = true
		want = appendFacts(want[:0], l.files[i].fst, false)
		if !bytes.Equal(line[2+sp:q], want) {
			return false
		}
	}
	return !slices.Contains(seen, false)
}

// lookup finds the quoted path q in at, without allocating for a path
// that needed no escapes.
func lookup(at map[string]int, q []byte) (int, bool) {
	if len(q) >= 2 && q[len(q)-1] == '"' && bytes.IndexByte(q, '\\') < 0 {
		i, ok := at[string(q[1:len(q)-1])]
		return i, ok
	}
	p, err := strconv.Unquote(string(q))
	if err != nil {
		return 0, false
	}
	i, ok := at[p]
	return i, ok
}

// appendFacts appends a baseline line's inode facts and racy flag, each
// after a space, and the space before the path.
func appendFacts(b []byte, f fileState, racy bool) []byte {
	for _, n := range []int64{f.Size, int64(f.Ino), f.Ctime, f.Mtime, int64(f.Mode)} {
		b = append(b, ' ')
		b = strconv.AppendInt(b, n, 10)
	}
	if racy {
		return append(b, " 1 "...)
	}
	return append(b, " 0 "...)
}

// saveBaseline writes a new generation when the baseline or the object
// index changed, and returns the one to remove once state.json names the
// new one (0: none).
func (s *Store) saveBaseline(st *state) (old int, err error) {
	b := encodeBaseline(st)
	if st.BaselineGen != 0 && bytes.Equal(b, st.baselineRaw) {
		return 0, nil
	}
	if err := s.Root.MkdirAll(s.rel("baselines"), 0o700); err != nil {
		return 0, err
	}
	old, st.BaselineGen = st.BaselineGen, st.BaselineGen+1
	if err := s.Root.Write(s.baselinePath(st.BaselineGen), b, 0o600); err != nil {
		st.BaselineGen = old
		return 0, err
	}
	st.baselineRaw = b
	return old, nil
}

// removeBaseline removes generation n, which state.json does not name.
func (s *Store) removeBaseline(n int) {
	if n > 0 {
		if err := s.Root.Remove(s.baselinePath(n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return // a generation left behind only takes room
		}
	}
}
