package memory

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hobbs-agent/hobbs/src/safefile"
)

// Index freshness rules (see the package doc).
var (
	// RacyWindow: time stamps this close to the moment they were recorded are
	// not trusted to reveal a later change.
	RacyWindow = 2 * time.Second
	// FullCheckEvery bounds how long the archive index is trusted on its
	// directory's time stamps alone before every file is checked again.
	FullCheckEvery = 10 * time.Minute
)

// Record flags.
const (
	flagUnindexed byte = 1 << iota // content not (or no longer) in the postings
	flagGone                       // file removed; ordinal kept until the next rebuild
	flagRacy                       // stamp too recent to trust: re-read at every check
)

// record is what the index keeps about one file.
type record struct {
	Name      string
	Stamp     fileStamp
	ErrLine   int
	ErrReason string // non-empty: the file does not parse

	ID, Status, Type, SupersededBy, Summary string
	Tags                                    []string
	Created, Updated, LastAccessed          int64 // unix seconds, 0 = unset
	Reinforced                              int
	Rendered                                int // characters of the memory in a context (renderMemory)
}

func recordOf(name string, st fileStamp, data []byte, tier Tier) record {
	r := record{Name: name, Stamp: st}
	m, err := Parse(data, tier)
	if err != nil {
		var pe *ParseError
		if errors.As(err, &pe) {
			r.ErrLine, r.ErrReason = pe.Line, pe.Reason
		} else {
			r.ErrReason = err.Error()
		}
		return r
	}
	r.ID, r.Status, r.Type, r.SupersededBy = m.ID, m.Status, m.Type, m.SupersededBy
	r.Summary = m.Summary(100)
	r.Tags = m.Tags
	r.Created, r.Updated, r.LastAccessed = unixSec(m.Created), unixSec(m.Updated), unixSec(m.LastAccessed)
	r.Reinforced = m.Reinforced
	r.Rendered = runes(renderMemory(m))
	return r
}

func unixSec(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

func fromUnix(s int64) time.Time {
	if s == 0 {
		return time.Time{}
	}
	return time.Unix(s, 0).UTC()
}

// ---- encoding ----

// Index files carry CRC-32C checksums: of the parts read whole when a file
// is opened (the meta file's flags, offsets and record checksums; the tri
// file's key table) and of each part read alone (a record, a posting list).
// A part that does not match is not used: a damaged record is taken from
// its file or dropped by the next check, a damaged list narrows nothing. So
// a file garbled in place costs time, never a wrong answer, without being
// read whole.
const (
	metaMagic = "HMEMMETA2\n"
	triMagic  = "HMEMTRI03\n"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

type enc struct{ b []byte }

func (e *enc) uv(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *enc) v(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *enc) s(s string)  { e.uv(uint64(len(s))); e.b = append(e.b, s...) }

type dec struct {
	b   []byte
	bad bool
}

func (d *dec) uv() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.bad, d.b = true, nil
		return 0
	}
	d.b = d.b[n:]
	return v
}
func (d *dec) v() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.bad, d.b = true, nil
		return 0
	}
	d.b = d.b[n:]
	return v
}
func (d *dec) s() string {
	n := d.uv()
	if n > uint64(len(d.b)) {
		d.bad, d.b = true, nil
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (r *record) encode(e *enc) {
	e.s(r.Name)
	e.v(r.Stamp.Size)
	e.v(r.Stamp.Mtime)
	e.v(r.Stamp.Ctime)
	e.uv(r.Stamp.Ino)
	e.uv(uint64(r.ErrLine))
	e.s(r.ErrReason)
	for _, s := range []string{r.ID, r.Status, r.Type, r.SupersededBy, r.Summary} {
		e.s(s)
	}
	e.uv(uint64(len(r.Tags)))
	for _, t := range r.Tags {
		e.s(t)
	}
	e.v(r.Created)
	e.v(r.Updated)
	e.v(r.LastAccessed)
	e.uv(uint64(r.Reinforced))
	e.uv(uint64(r.Rendered))
}

func decodeRecord(b []byte) (record, bool) {
	d := &dec{b: b}
	var r record
	r.Name = d.s()
	r.Stamp.Size, r.Stamp.Mtime, r.Stamp.Ctime, r.Stamp.Ino = d.v(), d.v(), d.v(), d.uv()
	r.ErrLine = int(d.uv())
	r.ErrReason = d.s()
	r.ID, r.Status, r.Type, r.SupersededBy, r.Summary = d.s(), d.s(), d.s(), d.s(), d.s()
	n := d.uv()
	if n > 1<<16 {
		return r, false
	}
	for i := uint64(0); i < n; i++ {
		r.Tags = append(r.Tags, d.s())
	}
	r.Created, r.Updated, r.LastAccessed = d.v(), d.v(), d.v()
	r.Reinforced = int(d.uv())
	r.Rendered = int(d.uv())
	return r, !d.bad
}

// ---- tier index ----

// tierIndex is the index of one tier directory. Records are addressed by
// ordinal; they decode lazily from the meta file. The files are read, never
// mapped (the agent can truncate them at any moment: a mapped page past the
// end is a SIGBUS), and only in the parts needed: the header and flags at
// once; offsets, checksums and records all together when every record is
// needed (a listing), in order through a small window (a check), or one by
// one (the candidates of a search in a trusted archive).
type tierIndex struct {
	root     safefile.Root
	tier     Tier
	dir      string
	idxDir   string
	stamp    uint64 // meta stamp
	triStamp uint64 // tri file the flags refer to
	flags    []byte
	offsets  []byte // (n+1) little-endian uint32 offsets into the records; nil: still only in meta
	crcs     []byte // n little-endian CRC-32C of the records (nil with offsets: records of this run)
	recsRaw  []byte // the records; nil while they are still only in meta
	meta     *os.File
	metaSize int64
	offsAt   int64  // where the offsets start in meta (the checksums follow them)
	recsAt   int64  // where the records start in meta
	seq      bool   // records are read in order (through win)
	win      []byte // records from winAt (relative to recsAt)
	winAt    int64
	decoded  []*record
	tri      *triFile
	terms    *termsFile     // recall's postings (with useTerms), same stamp as tri
	contents map[int][]byte // folded contents read during this run
	problems []Problem      // links and special files met (tier files or index files)
	trusted  bool           // used as it is, without a check (the archive's fast path)
	records  bool           // the caller uses every record: read them all at once
	recall   bool           // the caller ranks: the terms file is needed
	good     []uint64       // records of recsRaw whose checksum was verified
}

// What a caller of openTier will use of the index, besides what it
// searches or looks up.
type use int

const (
	useSome    use = iota // a few records (a search's candidates)
	useRecords            // every record
	useTerms              // a few records and the terms file (recall)
)

// intact reports whether the records ords can be read and match their
// checksums. An index used without a check that is not intact is opened
// again with a full check.
func (t *tierIndex) intact(ords []int) bool {
	for _, i := range ords {
		if _, ok := t.recBytes(i); !ok && t.decoded[i] == nil {
			return false
		}
	}
	return true
}

// intactAll is intact for every record (read at once).
func (t *tierIndex) intactAll() bool {
	if !t.loadOffsets() {
		return false
	}
	t.loadRecs()
	for i := 0; i < t.n(); i++ {
		if _, ok := t.recBytes(i); !ok && t.decoded[i] == nil {
			return false
		}
	}
	return true
}

func (t *tierIndex) n() int { return len(t.flags) }

// recRange returns where record i lies among the records and its checksum
// (check false: a record of this run, not read from a file).
func (t *tierIndex) recRange(i int) (a, b, sum uint32, check, ok bool) {
	if t.offsets != nil {
		a = binary.LittleEndian.Uint32(t.offsets[4*i:])
		b = binary.LittleEndian.Uint32(t.offsets[4*i+4:])
		if t.crcs != nil {
			sum, check = binary.LittleEndian.Uint32(t.crcs[4*i:]), true
		}
		return a, b, sum, check, a <= b
	}
	if t.meta == nil {
		return 0, 0, 0, false, false
	}
	n := int64(t.n())
	ab, ok1 := readAt(t.meta, t.offsAt+4*int64(i), 8, t.metaSize)
	cs, ok2 := readAt(t.meta, t.offsAt+4*(n+1)+4*int64(i), 4, t.metaSize)
	if !ok1 || !ok2 {
		return 0, 0, 0, false, false
	}
	a, b = binary.LittleEndian.Uint32(ab), binary.LittleEndian.Uint32(ab[4:])
	return a, b, binary.LittleEndian.Uint32(cs), true, a <= b && int64(b) <= t.metaSize-t.recsAt
}

// recBytes returns the encoded record i, false if it cannot be read or its
// checksum does not match.
func (t *tierIndex) recBytes(i int) ([]byte, bool) {
	a, b, sum, check, ok := t.recRange(i)
	if !ok {
		return nil, false
	}
	var raw []byte
	switch {
	case t.recsRaw != nil || t.meta == nil:
		if int(b) > len(t.recsRaw) {
			return nil, false
		}
		raw = t.recsRaw[a:b]
		if check && t.good != nil {
			if t.good[i/64]&(1<<(i%64)) != 0 {
				return raw, true // verified once already
			}
			if crc(raw) != sum {
				return nil, false
			}
			t.good[i/64] |= 1 << (i % 64)
			return raw, true
		}
	case t.seq:
		// In order, through a window that moves along the file: a check
		// reads every record once without holding them all.
		at := int64(a) - t.winAt
		if at < 0 || at+int64(b-a) > int64(len(t.win)) {
			end := min(int64(b)+64<<10, t.metaSize-t.recsAt)
			if need := int(end - int64(a)); cap(t.win) < need {
				t.win = make([]byte, need)
			} else {
				t.win = t.win[:need]
			}
			n, _ := t.meta.ReadAt(t.win, t.recsAt+int64(a))
			t.win, t.winAt, at = t.win[:n], int64(a), 0
			if n < int(b-a) {
				return nil, false // cut short since it was opened
			}
		}
		raw = t.win[at : at+int64(b-a)]
	default:
		raw = make([]byte, b-a)
		if _, err := t.meta.ReadAt(raw, t.recsAt+int64(a)); err != nil {
			return nil, false // cut short since it was opened
		}
	}
	if check && crc(raw) != sum {
		return nil, false
	}
	return raw, true
}

// loadOffsets reads every record's offsets and checksum at once (before
// every record is used). False when they do not rise from 0 to the end of
// the file: then no record can be trusted.
func (t *tierIndex) loadOffsets() bool {
	if t.offsets != nil || t.meta == nil {
		return true
	}
	n := int64(t.n())
	b, ok := readAt(t.meta, t.offsAt, 8*n+4, t.metaSize)
	if !ok {
		return false
	}
	offsets := b[:4*(n+1)]
	prev := uint32(0)
	for i := int64(0); i <= n; i++ {
		o := binary.LittleEndian.Uint32(offsets[4*i:])
		if o < prev || i == 0 && o != 0 {
			return false
		}
		prev = o
	}
	if int64(prev) != t.metaSize-t.recsAt {
		return false
	}
	t.offsets, t.crcs = offsets, b[4*(n+1):]
	return true
}

// forget drops what was read of the meta file (its records do not hold
// together): every file is new to the check, and the postings are rebuilt.
func (t *tierIndex) forget() {
	t.dropMeta()
	t.flags, t.decoded, t.offsets, t.crcs, t.recsRaw, t.good = nil, nil, nil, nil, nil, nil
	if t.tri != nil && t.tri.f != nil {
		t.tri.f.Close()
	}
	t.tri = nil
	t.terms.close()
	t.terms = nil
}

// loadRecs reads every record at once (before all of them are needed). If
// the file was cut short meanwhile, the records not read are damaged.
func (t *tierIndex) loadRecs() {
	if t.recsRaw != nil || t.meta == nil {
		return
	}
	if !t.loadOffsets() {
		t.recsRaw = []byte{} // every record damaged
		t.offsets = make([]byte, 4*(t.n()+1))
		t.crcs = make([]byte, 4*t.n())
		return
	}
	buf := make([]byte, t.metaSize-t.recsAt)
	n, _ := t.meta.ReadAt(buf, t.recsAt)
	t.recsRaw = buf[:n]
	t.good = make([]uint64, (t.n()+63)/64)
}

func (t *tierIndex) rec(i int) *record {
	if r := t.decoded[i]; r != nil {
		return r
	}
	r, ok := record{}, false
	if b, have := t.recBytes(i); have {
		r, ok = decodeRecord(b)
	}
	if !ok || !validName(r.Name) {
		r = record{Name: "", ErrReason: fmt.Sprintf("record %d of the index is damaged (derived data: delete %s to rebuild it)", i, t.idxDir)}
		// Damaged after the name and stamp (which a check compared with
		// the file): the file itself says the rest.
		if name, st := t.peek(i); len(name) > 0 {
			if data, err := readMemFile(t.root, filepath.Join(t.dir, string(name))); err == nil {
				r = recordOf(string(name), st, data, t.tier)
			}
		}
	}
	t.decoded[i] = &r
	return &r
}

// validName reports whether a name read from the index can be a file of the
// tier directory: a memory file's name, no path. (The agent can write the
// index: a name must never lead elsewhere.)
func validName(name string) bool {
	return memoryFile(name) && !strings.ContainsAny(name, "/\x00") && filepath.Base(name) == name
}

// problemPath is where a record's problem is reported: its file, or the
// index for a damaged record.
func (t *tierIndex) problemPath(r *record) string {
	if r.Name == "" {
		return t.path(".meta")
	}
	return filepath.Join(t.dir, r.Name)
}

func (t *tierIndex) live(i int) bool { return t.flags[i]&flagGone == 0 }

// close closes the index files still open.
func (t *tierIndex) close() {
	t.dropMeta()
	if t.tri != nil && t.tri.f != nil {
		t.tri.f.Close()
		t.tri.f = nil
	}
	t.terms.close()
}

// dropMeta closes the meta file once the records live in memory.
func (t *tierIndex) dropMeta() {
	if t.meta != nil {
		t.meta.Close()
		t.meta = nil
	}
}

func (t *tierIndex) path(ext string) string { return filepath.Join(t.idxDir, string(t.tier)+ext) }

// openDerived opens an index file and returns it with its size. A missing
// or unreadable one gives false (the index is rebuilt); a link or special
// file in its place is also reported.
func (t *tierIndex) openDerived(ext string) (*os.File, int64, bool) {
	p := t.path(ext)
	f, err := t.root.Open(p)
	if err != nil {
		if errors.Is(err, safefile.ErrUnsafe) {
			t.problems = append(t.problems, problemOf(p, err))
		}
		return nil, 0, false
	}
	fi, err := f.Stat()
	if err != nil || fi.Size() > maxIndexSize {
		f.Close()
		return nil, 0, false
	}
	return f, fi.Size(), true
}

// readAt reads exactly n bytes of f at off, within size.
func readAt(f *os.File, off, n, size int64) ([]byte, bool) {
	if off < 0 || n < 0 || off+n > size {
		return nil, false
	}
	b := make([]byte, n)
	if _, err := f.ReadAt(b, off); err != nil {
		return nil, false
	}
	return b, true
}

// maxRecords bounds the record count a meta file may claim (what is read
// at once is 5 bytes a record).
const maxRecords = 1 << 24

// loadMeta opens the meta file and reads its header and flags; the offsets,
// checksums and records are read when needed. It returns false if the file
// is missing or damaged.
func (t *tierIndex) loadMeta() bool {
	f, size, ok := t.openDerived(".meta")
	if !ok {
		return false
	}
	keep := false
	defer func() {
		if !keep {
			f.Close()
		}
	}()
	hl := int64(len(metaMagic) + 24)
	h, ok := readAt(f, 0, hl, size)
	if !ok || string(h[:len(metaMagic)]) != metaMagic {
		return false
	}
	p := h[len(metaMagic):]
	stamp := binary.LittleEndian.Uint64(p)
	triStamp := binary.LittleEndian.Uint64(p[8:])
	n := int64(binary.LittleEndian.Uint32(p[16:]))
	sum := binary.LittleEndian.Uint32(p[20:])
	if n > maxRecords {
		return false
	}
	flags, ok := readAt(f, hl, n, size)
	if !ok || crc(flags) != sum {
		return false
	}
	// The offsets start at 0 and the last one ends the file: a file cut
	// short is rebuilt (one garbled in between fails the checksum of the
	// records it concerns).
	offsAt := hl + n
	recsAt := offsAt + 8*n + 4
	first, ok1 := readAt(f, offsAt, 4, size)
	last, ok2 := readAt(f, offsAt+4*n, 4, size)
	if !ok1 || !ok2 || binary.LittleEndian.Uint32(first) != 0 || int64(binary.LittleEndian.Uint32(last)) != size-recsAt {
		return false
	}
	t.stamp, t.triStamp = stamp, triStamp
	t.flags, t.offsets, t.crcs = flags, nil, nil
	t.meta, t.metaSize, t.offsAt, t.recsAt, t.recsRaw = f, size, offsAt, recsAt, nil
	t.decoded = make([]*record, n)
	keep = true
	return true
}

func (t *tierIndex) loadTri() {
	t.tri = nil
	if t.triStamp == 0 {
		return
	}
	f, size, ok := t.openDerived(".tri")
	if !ok {
		return
	}
	tf, ok := readTri(f, size)
	if !ok || tf.stamp != t.triStamp {
		f.Close()
		return
	}
	t.tri = tf
	if t.recall && !t.loadTerms() {
		// Postings without the terms built with them: rebuild both.
		t.tri.f.Close()
		t.tri = nil
	}
}

// loadTerms opens the terms file built with the tri file (its header only).
func (t *tierIndex) loadTerms() bool {
	f, size, ok := t.openDerived(".terms")
	if !ok {
		return false
	}
	tf, ok := openTerms(f, nil, size)
	if !ok || tf.stamp != t.triStamp {
		f.Close()
		return false
	}
	t.terms = tf
	return true
}

// readState reads the archive's state file (small: read whole).
func (t *tierIndex) readState() (state, bool) {
	var s state
	p := t.path(".state")
	b, err := readLimited(t.root, p, 1<<20)
	if err != nil {
		if errors.Is(err, safefile.ErrUnsafe) {
			t.problems = append(t.problems, problemOf(p, err))
		}
		return s, false
	}
	if json.Unmarshal(b, &s) != nil {
		return s, false
	}
	return s, true
}

// state is the small file saying what the directory looked like at the last
// check, and when every file was last checked against the meta file.
type state struct {
	MetaStamp uint64    `json:"meta_stamp"`
	Dir       fileStamp `json:"dir"`
	CheckedAt int64     `json:"checked_at"` // unix ns: last check (listing or full)
	FullAt    int64     `json:"full_at"`    // unix ns: last check of every file
	// Unsafe names the links and special files named like memories that
	// the last check found: they are not in the index, and a run that
	// trusts it still reports them.
	Unsafe []string `json:"unsafe,omitempty"`
}

// recheckUnsafe reports the entries the last check found unsafe that still
// are (the names come from a file the agent can write: only names of the
// directory are looked at, without following them).
func (t *tierIndex) recheckUnsafe(d *os.File, names []string) {
	for _, name := range names {
		if !validName(name) {
			continue
		}
		if _, mode, err := statAt(d, name); err == nil && !mode.IsRegular() && !mode.IsDir() {
			p := filepath.Join(t.dir, name)
			t.problems = append(t.problems, problemOf(p, unsafeEntry(p, mode)))
		}
	}
}

// unsafeNames are the entries of the tier directory among t.problems.
func (t *tierIndex) unsafeNames() []string {
	var out []string
	for _, p := range t.problems {
		if filepath.Dir(p.Path) == t.dir && validName(filepath.Base(p.Path)) {
			out = append(out, filepath.Base(p.Path))
		}
	}
	sort.Strings(out)
	return out
}

// How much of the index a check may take on trust.
type checkMode int

const (
	checkFull checkMode = iota // stat every file
	checkNone                  // trust the index as it is
)

// openTier returns the up-to-date index of a tier, checking, refreshing and
// saving it as the rules say. forceFull checks every file. Every file and
// directory is opened through root; a link in place of dir is an error.
//
// A caller that uses every record (useRecords) gets them read at once.
func openTier(root safefile.Root, dir, idxDir string, tier Tier, now time.Time, forceFull bool, u use) (*tierIndex, error) {
	t := &tierIndex{root: root, tier: tier, dir: dir, idxDir: idxDir, records: u == useRecords, recall: u == useTerms}
	d, err := root.OpenDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			t.decoded = []*record{}
			return t, nil
		}
		return nil, err
	}
	defer d.Close()
	dirStamp, err := statFile(d)
	if err != nil {
		return nil, err
	}
	mode := checkFull
	var st state
	if t.loadMeta() {
		t.loadTri()
		if !forceFull && tier == Archive {
			st, mode = t.trust(dirStamp, now)
			if mode == checkNone {
				t.recheckUnsafe(d, st.Unsafe)
				t.trusted = true
				return t, nil
			}
		}
	} else {
		t.flags, t.decoded = nil, nil
	}
	if err := t.check(d, dirStamp, now); err != nil {
		t.close()
		return nil, err
	}
	return t, nil
}

// trust decides how much of the archive index to trust (see the package doc).
func (t *tierIndex) trust(dir fileStamp, now time.Time) (state, checkMode) {
	s, ok := t.readState()
	if !ok || s.MetaStamp != t.stamp || t.tri == nil {
		return s, checkFull
	}
	full := time.Unix(0, s.FullAt)
	if now.Sub(full) > FullCheckEvery || now.Before(full) {
		return s, checkFull
	}
	// A changed directory is checked file by file: a file replaced by
	// rename may carry the inode number of the one it replaced (filesystems
	// reuse a freed inode at once), so no listing tells which files changed.
	if s.Dir != dir || dir.Mtime >= s.CheckedAt-int64(RacyWindow) || dir.Ctime >= s.CheckedAt-int64(RacyWindow) {
		return s, checkFull
	}
	for _, f := range t.flags {
		if f&flagRacy != 0 {
			return s, checkFull
		}
	}
	return s, checkNone
}

func racy(st fileStamp, now time.Time) bool {
	limit := now.Add(-RacyWindow).UnixNano()
	return st.Mtime >= limit || st.Ctime >= limit
}

// memoryFile reports whether a directory entry is a memory file.
func memoryFile(name string) bool {
	return strings.HasSuffix(name, ".md") && !strings.HasPrefix(name, ".")
}

// peek decodes only the name and stamp of record i, without allocating.
func (t *tierIndex) peek(i int) (name []byte, st fileStamp) {
	if r := t.decoded[i]; r != nil {
		return []byte(r.Name), r.Stamp
	}
	raw, ok := t.recBytes(i)
	if !ok {
		return nil, fileStamp{}
	}
	d := &dec{b: raw}
	nl := d.uv()
	if nl > uint64(len(d.b)) {
		return nil, fileStamp{}
	}
	name, d.b = d.b[:nl], d.b[nl:]
	st.Size, st.Mtime, st.Ctime, st.Ino = d.v(), d.v(), d.v(), d.uv()
	if d.bad || !validName(string(name)) {
		return nil, fileStamp{}
	}
	return name, st
}

// check compares every file with its record, re-reads what changed, and
// saves the index when anything did. Unchanged records are neither decoded
// nor re-encoded.
func (t *tierIndex) check(d *os.File, dirStamp fileStamp, now time.Time) error {
	if !t.loadOffsets() { // every record is looked at
		t.forget()
	}
	if t.records {
		t.loadRecs() // the caller reads them all anyway
	}
	cur, err := t.listDir(d)
	if err != nil {
		return err
	}
	n := t.n()
	flags := append([]byte(nil), t.flags...)
	jobs, changed := t.compare(cur, flags)
	t.contents = map[int][]byte{}
	read := t.readJobs(jobs)
	updates, added, flags, applied := t.apply(jobs, read, flags, now)
	t.save(n, updates, added, flags, changed || applied, now)
	if t.tier == Archive {
		t.saveState(dirStamp, now)
	}
	return nil
}

// listDir is the directory now: every memory file stat'ed, by name. An
// entry that is neither a file nor a directory is a problem.
func (t *tierIndex) listDir(d *os.File) (map[string]fileStamp, error) {
	cur := make(map[string]fileStamp, t.n()+64)
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	stamps := statAll(d, names)
	for k, name := range names {
		switch {
		case !memoryFile(name) || stamps[k].err != nil || stamps[k].mode.IsDir():
		case stamps[k].mode.IsRegular():
			cur[name] = stamps[k].st
		default:
			p := filepath.Join(t.dir, name)
			t.problems = append(t.problems, problemOf(p, unsafeEntry(p, stamps[k].mode)))
		}
	}
	return cur, nil
}

// checkJob is a file check reads again: the record it replaces (ord; -1
// for a new file), its name and its stamp now.
type checkJob struct {
	ord  int
	name string
	st   fileStamp
}

// compare walks the records against cur (which it empties of the files
// that have one): a record whose file is gone is flagged so in flags; one
// whose file changed, or was racy, becomes a job, and so does every new
// file. Existing records come first, in order, then new files by name.
// changed says whether a record was flagged gone.
func (t *tierIndex) compare(cur map[string]fileStamp, flags []byte) (jobs []checkJob, changed bool) {
	t.seq = t.recsRaw == nil // every record's name and stamp, in order
	for i := 0; i < t.n(); i++ {
		if flags[i]&flagGone != 0 {
			continue
		}
		name, st := t.peek(i)
		c, ok := cur[string(name)]
		if !ok {
			flags[i] |= flagGone
			changed = true
			continue
		}
		delete(cur, string(name))
		if c != st || flags[i]&flagRacy != 0 {
			jobs = append(jobs, checkJob{ord: i, name: string(name), st: c})
		}
	}
	t.seq, t.win = false, nil
	for name, c := range cur { // new files
		jobs = append(jobs, checkJob{ord: -1, name: name, st: c})
	}
	sort.Slice(jobs, func(a, b int) bool {
		if jobs[a].ord != jobs[b].ord {
			return uint(jobs[a].ord) < uint(jobs[b].ord) // existing first, new last
		}
		return jobs[a].name < jobs[b].name
	})
	return jobs, changed
}

// jobRead is what reading a job's file gave: its record and folded text
// when ok; not ok when it vanished or is not a file any more.
type jobRead struct {
	rec    record
	folded []byte
	ok     bool
}

// readJobs reads the jobs' files in parallel. A file replaced by an unsafe
// entry since it was stat'ed is a problem, reported in the jobs' order.
func (t *tierIndex) readJobs(jobs []checkJob) []jobRead {
	read := make([]jobRead, len(jobs))
	bad := make([]error, len(jobs))
	parallel(len(jobs), func(k int) {
		j := &jobs[k]
		p := filepath.Join(t.dir, j.name)
		data, err := readMemFile(t.root, p)
		var tl *tooLargeError
		switch {
		case errors.As(err, &tl):
			// Kept as a record that does not parse: reported with the
			// others, not read again while it stays the same.
			read[k] = jobRead{rec: record{Name: j.name, Stamp: j.st, ErrReason: strings.TrimPrefix(tl.Error(), tl.Path+" ")}, ok: true}
			return
		case err != nil:
			if unsafe(err) { // replaced since it was stat'ed
				bad[k] = err
			}
			return
		}
		read[k] = jobRead{rec: recordOf(j.name, j.st, data, t.tier), folded: fold(make([]byte, 0, len(data)), data), ok: true}
	})
	for k, err := range bad {
		if err != nil {
			t.problems = append(t.problems, problemOf(filepath.Join(t.dir, jobs[k].name), err))
		}
	}
	return read
}

// apply turns what the jobs read into updates of existing records (by
// ord) and added records, flags each unindexed (and racy when its stamp is
// too recent to trust), and keeps each one's folded text in t.contents. A
// job whose file could not be read flags its record gone. It returns the
// flags, grown by the added records, and whether any record changed.
func (t *tierIndex) apply(jobs []checkJob, read []jobRead, flags []byte, now time.Time) (updates map[int]record, added []record, _ []byte, changed bool) {
	n := t.n()
	updates = map[int]record{}
	for k, j := range jobs {
		if !read[k].ok {
			if j.ord >= 0 {
				flags[j.ord] |= flagGone // vanished or not a file any more; the next check sees it again
				changed = true
			}
			continue
		}
		r := read[k].rec
		f := flagUnindexed
		if racy(j.st, now) {
			f |= flagRacy
		}
		if j.ord >= 0 {
			if old := t.rec(j.ord); !sameRecord(old, &r) || flags[j.ord] != f {
				changed = true
			}
			updates[j.ord], flags[j.ord] = r, f
			t.contents[j.ord] = read[k].folded
		} else {
			added = append(added, r)
			flags = append(flags, f)
			t.contents[n+len(added)-1] = read[k].folded
			changed = true
		}
	}
	return updates, added, flags, changed
}

// save makes the checked index current: rebuilt whole (its trigrams
// included) when there is none yet or much of it is dirty, else patched
// when anything changed. n is the number of records before the check.
func (t *tierIndex) save(n int, updates map[int]record, added []record, flags []byte, changed bool, now time.Time) {
	dirty := 0
	for _, f := range flags {
		if f&(flagUnindexed|flagGone) != 0 {
			dirty++
		}
	}
	if t.tri == nil || dirty > 64 && dirty > len(flags)/32 {
		t.loadRecs()
		recs := make([]record, 0, n+len(added))
		for i := 0; i < n; i++ {
			if r, ok := updates[i]; ok {
				recs = append(recs, r)
			} else {
				recs = append(recs, *t.rec(i))
			}
		}
		recs = append(recs, added...)
		recs, flags = t.rebuildTri(recs, flags, now)
		if err := t.saveMeta(recs, flags); err != nil {
			t.setMem(recs, flags)
		}
	} else if changed {
		t.savePatched(updates, added, flags)
	}
}

// saveState records that the archive was checked whole now, with the
// directory's stamp (trust reads it).
func (t *tierIndex) saveState(dirStamp fileStamp, now time.Time) {
	s := state{MetaStamp: t.stamp, Dir: dirStamp, CheckedAt: now.UnixNano(), FullAt: now.UnixNano(), Unsafe: t.unsafeNames()}
	if b, err := json.Marshal(s); err == nil {
		_ = writeDerived(t.root, t.path(".state"), b)
	}
}

// savePatched writes the meta file with updated and added records, copying
// the unchanged ones as they are, and makes the result current (in memory
// even when it cannot be saved).
func (t *tierIndex) savePatched(updates map[int]record, added []record, flags []byte) {
	t.loadRecs() // the unchanged records are copied as they are
	n := t.n()
	total := n + len(added)
	var body enc
	body.b = make([]byte, 0, len(t.recsRaw)+256*(len(updates)+len(added)))
	offs := make([]byte, 4*(total+1))
	decoded := make([]*record, total)
	for i := 0; i < total; i++ {
		binary.LittleEndian.PutUint32(offs[4*i:], uint32(len(body.b)))
		switch {
		case i >= n:
			r := added[i-n]
			r.encode(&body)
			decoded[i] = &r
		default:
			if r, ok := updates[i]; ok {
				r.encode(&body)
				decoded[i] = &r
				continue
			}
			if raw, ok := t.recBytes(i); ok && t.decoded[i] == nil {
				body.b = append(body.b, raw...) // checked: a damaged one is not carried on
			} else {
				t.rec(i).encode(&body)
			}
		}
	}
	binary.LittleEndian.PutUint32(offs[4*total:], uint32(len(body.b)))
	stamp := newStamp()
	_ = t.writeMeta(stamp, flags, offs, body.b) // unsaved: the index works from memory
	t.stamp = stamp
	t.flags, t.offsets, t.recsRaw, t.decoded = flags, offs, body.b, decoded
	t.crcs, t.good = nil, nil // records in memory: the ones copied were checked when read
	t.dropMeta()
}

func sameRecord(a, b *record) bool {
	return a.Name == b.Name && a.Stamp == b.Stamp && a.ErrLine == b.ErrLine && a.ErrReason == b.ErrReason &&
		a.ID == b.ID && a.Status == b.Status && a.Type == b.Type && a.SupersededBy == b.SupersededBy &&
		a.Summary == b.Summary && equalStrings(a.Tags, b.Tags) && a.Created == b.Created &&
		a.Updated == b.Updated && a.LastAccessed == b.LastAccessed && a.Reinforced == b.Reinforced &&
		a.Rendered == b.Rendered
}

// setMem makes recs/flags the index's in-memory state.
func (t *tierIndex) setMem(recs []record, flags []byte) {
	t.flags = flags
	t.decoded = make([]*record, len(recs))
	for i := range recs {
		t.decoded[i] = &recs[i]
	}
	t.dropMeta()
}

type statResult struct {
	st   fileStamp
	mode fs.FileMode // type bits
	err  error
}

// statAll stats the memory files among names in the open directory d
// (without following links).
func statAll(d *os.File, names []string) []statResult {
	out := make([]statResult, len(names))
	parallel(len(names), func(k int) {
		if !memoryFile(names[k]) {
			return
		}
		st, mode, err := statAt(d, names[k])
		out[k] = statResult{st, mode, err}
	})
	return out
}

// parallel runs fn(0..n-1) on a few goroutines.
func parallel(n int, fn func(int)) {
	workers := runtime.GOMAXPROCS(0) * 2
	if workers > n {
		workers = n
	}
	if workers <= 1 {
		for i := 0; i < n; i++ {
			fn(i)
		}
		return
	}
	var wg sync.WaitGroup
	const chunk = 64
	var next int64
	var mu sync.Mutex
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				a := int(next)
				next += chunk
				mu.Unlock()
				if a >= n {
					return
				}
				b := min(a+chunk, n)
				for i := a; i < b; i++ {
					fn(i)
				}
			}
		}()
	}
	wg.Wait()
}

func newStamp() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	s := binary.LittleEndian.Uint64(b[:])
	if s == 0 {
		s = 1
	}
	return s
}

// saveMeta writes recs/flags as the new meta file and makes them current.
func (t *tierIndex) saveMeta(recs []record, flags []byte) error {
	t.setMem(recs, flags)
	t.stamp = newStamp()
	var body enc
	offs := make([]byte, 4*(len(recs)+1))
	for i := range recs {
		binary.LittleEndian.PutUint32(offs[4*i:], uint32(len(body.b)))
		recs[i].encode(&body)
	}
	binary.LittleEndian.PutUint32(offs[4*len(recs):], uint32(len(body.b)))
	return t.writeMeta(t.stamp, flags, offs, body.b)
}

func (t *tierIndex) writeMeta(stamp uint64, flags, offs, body []byte) error {
	n := len(flags)
	head := make([]byte, 0, n+len(offs)+4*n)
	head = append(append(head, flags...), offs...)
	for i := 0; i < n; i++ {
		a := binary.LittleEndian.Uint32(offs[4*i:])
		b := binary.LittleEndian.Uint32(offs[4*i+4:])
		head = binary.LittleEndian.AppendUint32(head, crc(body[a:b]))
	}
	var out bytes.Buffer
	out.Grow(len(metaMagic) + 24 + len(head) + len(body))
	out.WriteString(metaMagic)
	var h [24]byte
	binary.LittleEndian.PutUint64(h[:], stamp)
	binary.LittleEndian.PutUint64(h[8:], t.triStamp)
	binary.LittleEndian.PutUint32(h[16:], uint32(n))
	binary.LittleEndian.PutUint32(h[20:], crc(flags))
	out.Write(h[:])
	out.Write(head)
	out.Write(body)
	if err := t.root.MkdirAll(t.idxDir, 0o755); err != nil {
		return err
	}
	return writeDerived(t.root, t.path(".meta"), out.Bytes())
}

// rebuildTri drops gone records, builds postings over every file's content
// and writes the tri file. It returns the compacted records and flags.
func (t *tierIndex) rebuildTri(recs []record, flags []byte, now time.Time) ([]record, []byte) {
	var keep []int
	for i := range recs {
		if flags[i]&flagGone == 0 {
			keep = append(keep, i)
		}
	}
	contents := make([][]byte, len(keep))
	ok := make([]bool, len(keep))
	parallel(len(keep), func(k int) {
		i := keep[k]
		if c, have := t.contents[i]; have {
			contents[k], ok[k] = c, true
			return
		}
		data, err := readMemFile(t.root, filepath.Join(t.dir, recs[i].Name))
		if err != nil {
			return
		}
		contents[k], ok[k] = fold(make([]byte, 0, len(data)), data), true
	})
	newRecs := make([]record, 0, len(keep))
	newFlags := make([]byte, 0, len(keep))
	newContents := map[int][]byte{}
	var docs [][]byte
	for k, i := range keep {
		f := flags[i] &^ flagUnindexed
		if !ok[k] {
			f |= flagUnindexed // unreadable now: always a candidate until the next check
		}
		newRecs = append(newRecs, recs[i])
		newFlags = append(newFlags, f)
		if ok[k] {
			docs = append(docs, contents[k])
			newContents[len(newRecs)-1] = contents[k]
		} else {
			docs = append(docs, nil)
		}
	}
	t.contents = newContents
	stamp := newStamp()
	data := buildTri(stamp, docs)
	terms := buildTerms(stamp, analyseAll(docs, newRecs))
	if err := t.root.MkdirAll(t.idxDir, 0o755); err == nil {
		// Else the postings from memory serve this run.
		_ = writeDerived(t.root, t.path(".tri"), data)
		_ = writeDerived(t.root, t.path(".terms"), terms)
	}
	if t.tri != nil && t.tri.f != nil {
		t.tri.f.Close()
	}
	t.terms.close()
	t.triStamp = stamp
	t.tri, _ = parseTri(data)
	t.terms, _ = openTerms(nil, terms, int64(len(terms)))
	return newRecs, newFlags
}

// ---- trigram postings ----

// A tri file holds, after its header, a block index (per block of triBlock
// keys: first key, first list offset, CRC of the block), the key table (per
// key: trigram, list offset, count, CRC of the list) and the posting lists.
// A lookup reads the block index once, then one block and one list: a search
// reads a few KiB of the file, never the whole table.
type triFile struct {
	stamp   uint64
	n       int // documents
	nkeys   int
	sparse  []byte // nblocks × 12
	data    []byte // the whole file, when held in memory (just built)
	f       *os.File
	size    int64
	tableAt int64
	blobAt  int64
}

const (
	triHeader = len(triMagic) + 24 // stamp, docs, keys, blocks, CRC of the block index
	triEntry  = 16
	triBlock  = 256
	triSparse = 12
)

// parseTri opens a tri file held in memory.
func parseTri(data []byte) (*triFile, bool) {
	return openTri(nil, data, int64(len(data)))
}

// readTri opens the tri file f (size bytes): header and block index.
func readTri(f *os.File, size int64) (*triFile, bool) {
	return openTri(f, nil, size)
}

func openTri(f *os.File, data []byte, size int64) (*triFile, bool) {
	tf := &triFile{f: f, data: data, size: size}
	h, ok := tf.read(0, int64(triHeader))
	if !ok || string(h[:len(triMagic)]) != triMagic {
		return nil, false
	}
	p := h[len(triMagic):]
	tf.stamp, tf.n = binary.LittleEndian.Uint64(p), int(binary.LittleEndian.Uint32(p[8:]))
	nkeys, nblocks := int64(binary.LittleEndian.Uint32(p[12:])), int64(binary.LittleEndian.Uint32(p[16:]))
	sum := binary.LittleEndian.Uint32(p[20:])
	if nkeys > 1<<24 || nblocks != (nkeys+triBlock-1)/triBlock { // a key is a trigram: 24 bits
		return nil, false
	}
	tf.nkeys = int(nkeys)
	tf.tableAt = int64(triHeader) + triSparse*nblocks
	tf.blobAt = tf.tableAt + triEntry*nkeys
	if tf.blobAt > size {
		return nil, false
	}
	if tf.sparse, ok = tf.read(int64(triHeader), triSparse*nblocks); !ok || crc(tf.sparse) != sum {
		return nil, false
	}
	for j := int64(1); j < nblocks; j++ { // first keys and offsets rise
		if tf.blockKey(int(j)) <= tf.blockKey(int(j-1)) || tf.blockOff(int(j)) < tf.blockOff(int(j-1)) {
			return nil, false
		}
	}
	return tf, true
}

// read returns n bytes at off, from memory or the file (false when they are
// not all there: the file was cut short).
func (tf *triFile) read(off, n int64) ([]byte, bool) {
	if tf.data != nil {
		if off < 0 || n < 0 || off+n > int64(len(tf.data)) {
			return nil, false
		}
		return tf.data[off : off+n], true
	}
	return readAt(tf.f, off, n, tf.size)
}

func (tf *triFile) blocks() int           { return len(tf.sparse) / triSparse }
func (tf *triFile) blockKey(j int) uint32 { return binary.LittleEndian.Uint32(tf.sparse[triSparse*j:]) }
func (tf *triFile) blockOff(j int) uint32 {
	return binary.LittleEndian.Uint32(tf.sparse[triSparse*j+4:])
}

func triKey(a, b, c byte) uint32 { return uint32(a)<<16 | uint32(b)<<8 | uint32(c) }

// triSlot is buildTri's trigram array (64 MiB), kept for the next build in
// the same process and all zero between builds. A build that finds it in
// use allocates its own.
var triSlot struct {
	sync.Mutex
	s []int32
}

func buildTri(stamp uint64, docs [][]byte) []byte {
	// slot maps a trigram (24 bits) to 1 + its list number: an array is much
	// faster than a map over tens of millions of trigrams. The shared one is
	// cleared key by key when done, which costs far less than zeroing 64 MiB
	// anew for every build.
	var slot []int32
	var keys []uint32
	if triSlot.TryLock() {
		if triSlot.s == nil {
			triSlot.s = make([]int32, 1<<24)
		}
		slot = triSlot.s
		defer func() {
			for _, k := range keys {
				slot[k] = 0
			}
			triSlot.Unlock()
		}()
	} else {
		slot = make([]int32, 1<<24)
	}
	var lists [][]uint32
	for ord, d := range docs {
		for i := 0; i+2 < len(d); i++ {
			k := triKey(d[i], d[i+1], d[i+2])
			s := slot[k]
			if s == 0 {
				lists = append(lists, nil)
				keys = append(keys, k)
				s = int32(len(lists))
				slot[k] = s
			}
			l := lists[s-1]
			if len(l) == 0 || l[len(l)-1] != uint32(ord) {
				lists[s-1] = append(l, uint32(ord))
			}
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	var blob enc
	table := make([]byte, triEntry*len(keys))
	for i, k := range keys {
		l := lists[slot[k]-1]
		start := len(blob.b)
		prev := uint32(0)
		for _, o := range l {
			blob.uv(uint64(o - prev))
			prev = o
		}
		e := table[triEntry*i:]
		binary.LittleEndian.PutUint32(e, k)
		binary.LittleEndian.PutUint32(e[4:], uint32(start))
		binary.LittleEndian.PutUint32(e[8:], uint32(len(l)))
		binary.LittleEndian.PutUint32(e[12:], crc(blob.b[start:]))
	}
	nblocks := (len(keys) + triBlock - 1) / triBlock
	sparse := make([]byte, 0, triSparse*nblocks)
	for j := 0; j < nblocks; j++ {
		block := table[triEntry*triBlock*j : triEntry*min(triBlock*(j+1), len(keys))]
		sparse = append(sparse, block[:8]...) // first key and offset
		sparse = binary.LittleEndian.AppendUint32(sparse, crc(block))
	}
	out := make([]byte, 0, triHeader+len(sparse)+len(table)+len(blob.b))
	out = append(out, triMagic...)
	out = binary.LittleEndian.AppendUint64(out, stamp)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(docs)))
	out = binary.LittleEndian.AppendUint32(out, uint32(len(keys)))
	out = binary.LittleEndian.AppendUint32(out, uint32(nblocks))
	out = binary.LittleEndian.AppendUint32(out, crc(sparse))
	out = append(out, sparse...)
	out = append(out, table...)
	return append(out, blob.b...)
}

// postings returns the ordinals whose content contains the trigram k;
// false when the list cannot be used (the file was cut short since it was
// opened, or its block or list is damaged).
func (tf *triFile) postings(k uint32) ([]uint32, bool) {
	nb := tf.blocks()
	j := sort.Search(nb, func(j int) bool { return tf.blockKey(j) > k }) - 1
	if j < 0 {
		return nil, true // before the first key
	}
	count := min(triBlock, tf.nkeys-triBlock*j)
	block, ok := tf.read(tf.tableAt+int64(triEntry*triBlock*j), int64(triEntry*count))
	if !ok || crc(block) != binary.LittleEndian.Uint32(tf.sparse[triSparse*j+8:]) ||
		binary.LittleEndian.Uint32(block) != tf.blockKey(j) || binary.LittleEndian.Uint32(block[4:]) != tf.blockOff(j) {
		return nil, false
	}
	i := sort.Search(count, func(i int) bool { return binary.LittleEndian.Uint32(block[triEntry*i:]) >= k })
	if i == count || binary.LittleEndian.Uint32(block[triEntry*i:]) != k {
		return nil, true
	}
	e := block[triEntry*i:]
	off, cnt, sum := int64(binary.LittleEndian.Uint32(e[4:])), binary.LittleEndian.Uint32(e[8:]), binary.LittleEndian.Uint32(e[12:])
	end := tf.size - tf.blobAt
	switch {
	case i+1 < count:
		end = int64(binary.LittleEndian.Uint32(block[triEntry*(i+1)+4:]))
	case j+1 < nb:
		end = int64(tf.blockOff(j + 1))
	}
	if end < off || end-off < int64(cnt) { // each entry takes a byte at least
		return nil, false
	}
	raw, ok := tf.read(tf.blobAt+off, end-off)
	if !ok || crc(raw) != sum {
		return nil, false
	}
	d := &dec{b: raw}
	out := make([]uint32, 0, cnt)
	prev := uint32(0)
	for j := uint32(0); j < cnt; j++ {
		prev += uint32(d.uv())
		if d.bad {
			return nil, false
		}
		out = append(out, prev)
	}
	return out, true
}

// candidates returns the ordinals that may contain the folded literal lit,
// sorted; all=true when the index cannot narrow (short literal, no postings).
func (t *tierIndex) candidates(lits [][]byte) (ords []int, all bool) {
	if t.tri == nil || len(lits) == 0 {
		return nil, true
	}
	var cur []uint32
	first := true
	for _, lit := range lits {
		if len(lit) < 3 {
			continue
		}
		seen := map[uint32]bool{}
		for i := 0; i+2 < len(lit); i++ {
			k := triKey(lit[i], lit[i+1], lit[i+2])
			if seen[k] {
				continue
			}
			seen[k] = true
			p, ok := t.tri.postings(k)
			if !ok {
				return nil, true // cannot narrow: every file is a candidate
			}
			if first {
				cur, first = p, false
			} else {
				cur = intersect(cur, p)
			}
			if len(cur) == 0 {
				break
			}
		}
	}
	if first {
		return nil, true
	}
	set := map[int]bool{}
	for _, o := range cur {
		if int(o) < t.n() && t.flags[o]&flagGone == 0 {
			set[int(o)] = true
		}
	}
	for i, f := range t.flags {
		if f&flagGone == 0 && (f&(flagUnindexed|flagRacy) != 0 || i >= t.tri.n) {
			set[i] = true
		}
	}
	for o := range set {
		ords = append(ords, o)
	}
	sort.Ints(ords)
	return ords, false
}

func intersect(a, b []uint32) []uint32 {
	out := a[:0:0]
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] == b[j]:
			out = append(out, a[i])
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return out
}

// writeDerived replaces an index file atomically (temp file and rename,
// through root) but without fsync of the file: the index is derived data,
// checked on every use, and a file lost in a crash is rebuilt. A link or
// special file in its place is left alone (it was reported when read).
func writeDerived(root safefile.Root, path string, data []byte) error {
	if fi, err := root.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return unsafeEntry(path, fi.Mode())
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := filepath.Join(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-"+hex.EncodeToString(rnd[:]))
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o644) // whatever the umask
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, path)
	}
	if err != nil {
		_ = root.Remove(tmp)
	}
	return err
}
