package memory

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
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

const (
	metaMagic = "HMEMMETA1\n"
	triMagic  = "HMEMTRI01\n"
)

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
	return r, !d.bad
}

// ---- tier index ----

// tierIndex is the index of one tier directory. Records are addressed by
// ordinal; they decode lazily from the mapped meta file.
type tierIndex struct {
	tier     Tier
	dir      string
	idxDir   string
	stamp    uint64 // meta stamp
	triStamp uint64 // tri file the flags refer to
	flags    []byte
	offsets  []byte // (n+1) little-endian uint32 offsets into recs
	recsRaw  []byte
	decoded  []*record
	release  []func()
	tri      *triFile
	contents map[int][]byte // folded contents read during this run
}

func (t *tierIndex) n() int { return len(t.flags) }

func (t *tierIndex) rec(i int) *record {
	if r := t.decoded[i]; r != nil {
		return r
	}
	a := binary.LittleEndian.Uint32(t.offsets[4*i:])
	b := binary.LittleEndian.Uint32(t.offsets[4*i+4:])
	r, ok := record{}, false
	if a <= b && int(b) <= len(t.recsRaw) {
		r, ok = decodeRecord(t.recsRaw[a:b])
	}
	if !ok {
		r = record{Name: "", ErrReason: "index record damaged"}
	}
	t.decoded[i] = &r
	return &r
}

func (t *tierIndex) live(i int) bool { return t.flags[i]&flagGone == 0 }

func (t *tierIndex) close() {
	for _, f := range t.release {
		f()
	}
	t.release = nil
}

func (t *tierIndex) path(ext string) string { return filepath.Join(t.idxDir, string(t.tier)+ext) }

// loadMeta maps the meta file. It returns false if missing or damaged.
func (t *tierIndex) loadMeta() bool {
	data, release, err := mapFile(t.path(".meta"))
	if err != nil {
		return false
	}
	ok := false
	defer func() {
		if !ok {
			release()
		}
	}()
	if len(data) < len(metaMagic)+20 || string(data[:len(metaMagic)]) != metaMagic {
		return false
	}
	p := data[len(metaMagic):]
	t.stamp = binary.LittleEndian.Uint64(p)
	t.triStamp = binary.LittleEndian.Uint64(p[8:])
	n := int(binary.LittleEndian.Uint32(p[16:]))
	p = p[20:]
	if n < 0 || len(p) < n+4*(n+1) {
		return false
	}
	t.flags = append([]byte(nil), p[:n]...)
	t.offsets = p[n : n+4*(n+1)]
	t.recsRaw = p[n+4*(n+1):]
	t.decoded = make([]*record, n)
	t.release = append(t.release, release)
	ok = true
	return true
}

func (t *tierIndex) loadTri() {
	t.tri = nil
	if t.triStamp == 0 {
		return
	}
	data, release, err := mapFile(t.path(".tri"))
	if err != nil {
		return
	}
	tf, ok := parseTri(data)
	if !ok || tf.stamp != t.triStamp {
		release()
		return
	}
	t.release = append(t.release, release)
	t.tri = tf
}

// state is the small file saying what the directory looked like at the last
// check, and when every file was last checked against the meta file.
type state struct {
	MetaStamp uint64    `json:"meta_stamp"`
	Dir       fileStamp `json:"dir"`
	CheckedAt int64     `json:"checked_at"` // unix ns: last check (listing or full)
	FullAt    int64     `json:"full_at"`    // unix ns: last check of every file
}

func (t *tierIndex) readState() (state, bool) {
	var s state
	b, err := os.ReadFile(t.path(".state"))
	if err != nil || json.Unmarshal(b, &s) != nil {
		return s, false
	}
	return s, true
}

// How much of the index a check may take on trust.
type checkMode int

const (
	checkFull    checkMode = iota // stat every file
	checkListing                  // list the directory; stat only new names, new inodes and racy records
	checkNone                     // trust the index as it is
)

// openTier returns the up-to-date index of a tier, checking, refreshing and
// saving it as the rules say. forceFull checks every file.
func openTier(dir, idxDir string, tier Tier, now time.Time, forceFull bool) (*tierIndex, error) {
	t := &tierIndex{tier: tier, dir: dir, idxDir: idxDir}
	dirStamp, err := statPath(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			t.decoded = []*record{}
			return t, nil
		}
		return nil, err
	}
	mode := checkFull
	var st state
	if t.loadMeta() {
		t.loadTri()
		if !forceFull && tier == Archive {
			st, mode = t.trust(dirStamp, now)
			if mode == checkNone {
				return t, nil
			}
		}
	} else {
		t.flags, t.decoded = nil, nil
	}
	if err := t.check(dirStamp, now, mode, st); err != nil {
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
	if s.Dir != dir || dir.Mtime >= s.CheckedAt-int64(RacyWindow) || dir.Ctime >= s.CheckedAt-int64(RacyWindow) {
		return s, checkListing
	}
	for _, f := range t.flags {
		if f&flagRacy != 0 {
			return s, checkListing
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
	a := binary.LittleEndian.Uint32(t.offsets[4*i:])
	b := binary.LittleEndian.Uint32(t.offsets[4*i+4:])
	if a > b || int(b) > len(t.recsRaw) {
		return nil, fileStamp{}
	}
	d := &dec{b: t.recsRaw[a:b]}
	nl := d.uv()
	if nl > uint64(len(d.b)) {
		return nil, fileStamp{}
	}
	name, d.b = d.b[:nl], d.b[nl:]
	st.Size, st.Mtime, st.Ctime, st.Ino = d.v(), d.v(), d.v(), d.uv()
	return name, st
}

// check compares the files with their records (every file, or with
// checkListing only new names, new inodes and racy records), re-reads what
// changed, and saves the index when anything did. Unchanged records are
// neither decoded nor re-encoded.
func (t *tierIndex) check(dirStamp fileStamp, now time.Time, mode checkMode, prev state) error {
	d, err := os.Open(t.dir)
	if err != nil {
		return err
	}
	defer d.Close()
	// cur: the directory now. For a full check every memory file is stat'ed;
	// for a listing check only inodes are known (stamp.Ino).
	cur := make(map[string]fileStamp, t.n()+64)
	if mode == checkListing {
		ents, ok, err := readDirents(t.dir)
		if err != nil {
			return err
		}
		if ok {
			for _, e := range ents {
				if memoryFile(e.name) {
					cur[e.name] = fileStamp{Ino: e.ino, Size: -1}
				}
			}
		} else {
			mode = checkFull
		}
	}
	if mode == checkFull {
		names, err := d.Readdirnames(-1)
		if err != nil {
			return err
		}
		stamps := statAll(d, names)
		for k, name := range names {
			if memoryFile(name) && stamps[k].ok {
				cur[name] = stamps[k].st
			}
		}
	}
	n := t.n()
	flags := append([]byte(nil), t.flags...)
	type job struct {
		ord  int
		name string
		st   fileStamp
		full bool // st is a full stamp (else: stat first)
	}
	var jobs []job
	changed := false
	for i := 0; i < n; i++ {
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
		if mode == checkListing {
			if c.Ino != st.Ino || flags[i]&flagRacy != 0 {
				jobs = append(jobs, job{ord: i, name: string(name)})
			}
			continue
		}
		if c != st || flags[i]&flagRacy != 0 {
			jobs = append(jobs, job{ord: i, name: string(name), st: c, full: true})
		}
	}
	for name, c := range cur { // new files
		jobs = append(jobs, job{ord: -1, name: name, st: c, full: mode == checkFull})
	}
	sort.Slice(jobs, func(a, b int) bool {
		if jobs[a].ord != jobs[b].ord {
			return uint(jobs[a].ord) < uint(jobs[b].ord) // existing first, new last
		}
		return jobs[a].name < jobs[b].name
	})
	t.contents = map[int][]byte{}
	results := make([]record, len(jobs))
	folded := make([][]byte, len(jobs))
	readOK := make([]bool, len(jobs))
	parallel(len(jobs), func(k int) {
		j := &jobs[k]
		if !j.full {
			st, regular, err := statAt(d, j.name)
			if err != nil || !regular {
				return
			}
			j.st = st
		}
		data, err := os.ReadFile(filepath.Join(t.dir, j.name))
		if err != nil {
			return
		}
		results[k] = recordOf(j.name, j.st, data, t.tier)
		folded[k] = fold(make([]byte, 0, len(data)), data)
		readOK[k] = true
	})
	updates := map[int]record{}
	var added []record
	for k, j := range jobs {
		if !readOK[k] {
			if j.ord >= 0 {
				flags[j.ord] |= flagGone // vanished or not a file any more; the next check sees it again
				changed = true
			}
			continue
		}
		r := results[k]
		f := flagUnindexed
		if racy(j.st, now) {
			f |= flagRacy
		}
		if j.ord >= 0 {
			if old := t.rec(j.ord); !sameRecord(old, &r) || flags[j.ord] != f {
				changed = true
			}
			updates[j.ord], flags[j.ord] = r, f
			t.contents[j.ord] = folded[k]
		} else {
			added = append(added, r)
			flags = append(flags, f)
			t.contents[n+len(added)-1] = folded[k]
			changed = true
		}
	}
	dirty := 0
	for _, f := range flags {
		if f&(flagUnindexed|flagGone) != 0 {
			dirty++
		}
	}
	if t.tri == nil || dirty > 64 && dirty > len(flags)/32 {
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
	if t.tier == Archive {
		s := state{MetaStamp: t.stamp, Dir: dirStamp, CheckedAt: now.UnixNano(), FullAt: now.UnixNano()}
		if mode == checkListing {
			s.FullAt = prev.FullAt
		}
		if b, err := json.Marshal(s); err == nil {
			_ = writeDerived(t.path(".state"), b)
		}
	}
	return nil
}

// savePatched writes the meta file with updated and added records, copying
// the unchanged ones as they are, and makes the result current (in memory
// even when it cannot be saved).
func (t *tierIndex) savePatched(updates map[int]record, added []record, flags []byte) {
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
			a := binary.LittleEndian.Uint32(t.offsets[4*i:])
			b := binary.LittleEndian.Uint32(t.offsets[4*i+4:])
			if t.decoded[i] != nil || a > b || int(b) > len(t.recsRaw) {
				t.rec(i).encode(&body)
			} else {
				body.b = append(body.b, t.recsRaw[a:b]...)
			}
		}
	}
	binary.LittleEndian.PutUint32(offs[4*total:], uint32(len(body.b)))
	stamp := newStamp()
	if err := t.writeMeta(stamp, flags, offs, body.b); err != nil {
		// keep working from memory
	}
	t.stamp = stamp
	t.flags, t.offsets, t.recsRaw, t.decoded = flags, offs, body.b, decoded
}

func sameRecord(a, b *record) bool {
	return a.Name == b.Name && a.Stamp == b.Stamp && a.ErrLine == b.ErrLine && a.ErrReason == b.ErrReason &&
		a.ID == b.ID && a.Status == b.Status && a.Type == b.Type && a.SupersededBy == b.SupersededBy &&
		a.Summary == b.Summary && equalStrings(a.Tags, b.Tags) && a.Created == b.Created &&
		a.Updated == b.Updated && a.LastAccessed == b.LastAccessed && a.Reinforced == b.Reinforced
}

// setMem makes recs/flags the index's in-memory state.
func (t *tierIndex) setMem(recs []record, flags []byte) {
	t.flags = flags
	t.decoded = make([]*record, len(recs))
	for i := range recs {
		t.decoded[i] = &recs[i]
	}
}

type statResult struct {
	st fileStamp
	ok bool
}

func statAll(d *os.File, names []string) []statResult {
	out := make([]statResult, len(names))
	parallel(len(names), func(k int) {
		if !memoryFile(names[k]) {
			return
		}
		st, regular, err := statAt(d, names[k])
		out[k] = statResult{st, err == nil && regular}
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
	var out bytes.Buffer
	out.Grow(len(metaMagic) + 20 + len(flags) + len(offs) + len(body))
	out.WriteString(metaMagic)
	var h [20]byte
	binary.LittleEndian.PutUint64(h[:], stamp)
	binary.LittleEndian.PutUint64(h[8:], t.triStamp)
	binary.LittleEndian.PutUint32(h[16:], uint32(len(flags)))
	out.Write(h[:])
	out.Write(flags)
	out.Write(offs)
	out.Write(body)
	if err := os.MkdirAll(t.idxDir, 0o755); err != nil {
		return err
	}
	return writeDerived(t.path(".meta"), out.Bytes())
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
		data, err := os.ReadFile(filepath.Join(t.dir, recs[i].Name))
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
	if err := os.MkdirAll(t.idxDir, 0o755); err == nil {
		if err := writeDerived(t.path(".tri"), data); err == nil {
			t.triStamp = stamp
			tf, _ := parseTri(data)
			t.tri = tf
			return newRecs, newFlags
		}
	}
	// Could not save: use the postings from memory for this run.
	t.triStamp = stamp
	t.tri, _ = parseTri(data)
	return newRecs, newFlags
}

// ---- trigram postings ----

type triFile struct {
	stamp uint64
	n     int
	table []byte // nkeys × 12: key, offset, count
	blob  []byte
}

func parseTri(data []byte) (*triFile, bool) {
	h := len(triMagic) + 16
	if len(data) < h || string(data[:len(triMagic)]) != triMagic {
		return nil, false
	}
	p := data[len(triMagic):]
	tf := &triFile{stamp: binary.LittleEndian.Uint64(p), n: int(binary.LittleEndian.Uint32(p[8:]))}
	nkeys := int(binary.LittleEndian.Uint32(p[12:]))
	p = p[16:]
	if nkeys < 0 || len(p) < 12*nkeys {
		return nil, false
	}
	tf.table, tf.blob = p[:12*nkeys], p[12*nkeys:]
	return tf, true
}

func triKey(a, b, c byte) uint32 { return uint32(a)<<16 | uint32(b)<<8 | uint32(c) }

func buildTri(stamp uint64, docs [][]byte) []byte {
	// slot maps a trigram (24 bits) to 1 + its list number: an array is much
	// faster than a map over tens of millions of trigrams.
	slot := make([]int32, 1<<24)
	var lists [][]uint32
	var keys []uint32
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
	table := make([]byte, 12*len(keys))
	for i, k := range keys {
		l := lists[slot[k]-1]
		binary.LittleEndian.PutUint32(table[12*i:], k)
		binary.LittleEndian.PutUint32(table[12*i+4:], uint32(len(blob.b)))
		binary.LittleEndian.PutUint32(table[12*i+8:], uint32(len(l)))
		prev := uint32(0)
		for _, o := range l {
			blob.uv(uint64(o - prev))
			prev = o
		}
	}
	out := make([]byte, 0, len(triMagic)+16+len(table)+len(blob.b))
	out = append(out, triMagic...)
	out = binary.LittleEndian.AppendUint64(out, stamp)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(docs)))
	out = binary.LittleEndian.AppendUint32(out, uint32(len(keys)))
	out = append(out, table...)
	return append(out, blob.b...)
}

// postings returns the ordinals whose content contains the trigram k.
func (tf *triFile) postings(k uint32) []uint32 {
	nkeys := len(tf.table) / 12
	i := sort.Search(nkeys, func(i int) bool { return binary.LittleEndian.Uint32(tf.table[12*i:]) >= k })
	if i == nkeys || binary.LittleEndian.Uint32(tf.table[12*i:]) != k {
		return nil
	}
	off := binary.LittleEndian.Uint32(tf.table[12*i+4:])
	cnt := binary.LittleEndian.Uint32(tf.table[12*i+8:])
	if int(off) > len(tf.blob) {
		return nil
	}
	d := &dec{b: tf.blob[off:]}
	out := make([]uint32, 0, cnt)
	prev := uint32(0)
	for j := uint32(0); j < cnt && !d.bad; j++ {
		prev += uint32(d.uv())
		out = append(out, prev)
	}
	return out
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
			p := t.tri.postings(k)
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

// writeDerived replaces an index file atomically (temp file and rename) but
// without fsync: the index is derived data, checked on every use, and a file
// lost in a crash is rebuilt. User data goes through safefile instead.
func writeDerived(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}
