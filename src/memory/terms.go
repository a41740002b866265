package memory

import (
	"encoding/binary"
	"os"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hobbs-agent/hobbs/src/frontmatter"
)

// ---- term postings (recall) ----

// A terms file (<tier>.terms) holds what recall ranks by, for the same
// documents and ordinals as the tri file it is built with (same stamp):
//
//	header  magic, stamp, documents, keys, blocks, CRC of the block index,
//	        CRC of the document sums, total text and tag terms
//	sums    per block of docBlock documents: CRC of its entries
//	docs    per document: created (unix seconds), text terms, reinforced,
//	        tag terms, time expressions, flags (docEntry)
//	blocks  per block of termBlock keys: first key, first list offset, CRC
//	table   per key (a 64-bit FNV-1a hash of the term): list offset, count,
//	        CRC of the list
//	lists   per document holding the term: ordinal (delta), count in the
//	        text, count in the tags
//
// The header is read when the index is opened for recall; the document
// sums and block index when a query needs them; then one block and one
// list per query term, and the blocks of documents its lists name. Every part carries a CRC-32C: a damaged part is
// not used (recall then reads the files themselves), never trusted.
//
// Two terms with the same 64-bit hash would share a list: they are
// counted as one term, which only changes a ranking and only with a
// probability far below one in a billion for a million distinct terms.
const (
	termsMagic  = "HMEMTRM02\n"
	termsHeader = len(termsMagic) + 44
	docEntry    = 16
	docBlock    = 256 // documents per checksum
	termBlock   = 256
	termSparse  = 16
	termEntry   = 20
)

// Document flags in the table.
const (
	docUnparsed   byte = 1 << iota // the file does not parse: never recalled
	docSuperseded                  // status superseded
)

// docInfo is what recall knows of a document besides its terms.
type docInfo struct {
	created    int64 // unix seconds, 0 = unset
	textLen    int   // terms in the text
	tagLen     int   // terms in the tags
	reinforced int
	timeRefs   int // time expressions other than the memory's own month and year
	flags      byte
}

func (d *docInfo) put(b []byte) {
	binary.LittleEndian.PutUint64(b, uint64(d.created))
	binary.LittleEndian.PutUint16(b[8:], uint16(min(d.textLen, 0xffff)))
	binary.LittleEndian.PutUint16(b[10:], uint16(min(d.reinforced, 0xffff)))
	b[12] = byte(min(d.tagLen, 0xff))
	b[13] = byte(min(d.timeRefs, 0xff))
	b[14] = d.flags
	b[15] = 0
}

func getDoc(b []byte) docInfo {
	return docInfo{created: int64(binary.LittleEndian.Uint64(b)), textLen: int(binary.LittleEndian.Uint16(b[8:])),
		reinforced: int(binary.LittleEndian.Uint16(b[10:])), tagLen: int(b[12]), timeRefs: int(b[13]), flags: b[14]}
}

// termKey is the key of a term in a terms file: its 64-bit FNV-1a hash.
func termKey[S string | []byte](term S) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(term); i++ {
		h ^= uint64(term[i])
		h *= 1099511628211
	}
	return h
}

// posting is one document of a term's list.
type posting struct {
	ord     uint32
	tf, tag uint16 // occurrences in the text and in the tags
}

// docTerms is one document analysed for recall: its info and its terms
// with their counts, each once.
type docTerms struct {
	info  docInfo
	terms []termCount
}

type termCount struct {
	key     uint64
	tf, tag uint16
}

// analyse returns the terms of a memory's text and tags, and its info.
// created is the memory's, in unix seconds.
func (tk *tokenizer) analyse(body []byte, tags []string, created int64) docTerms {
	var d docTerms
	d.info.created = created
	var month time.Month
	year := -1
	if created != 0 {
		t := time.Unix(created, 0).UTC()
		month, year = t.Month(), t.Year()
	}
	all := tk.all[:0] // one per occurrence, merged below
	tk.words(body, func(w []byte) {
		wi := tk.info(w)
		if wi.time && (wi.month == 0 || time.Month(wi.month) != month) && (wi.year == 0 || int(wi.year) != year) {
			d.info.timeRefs++
		}
		if wi.key != 0 {
			all = append(all, termCount{key: wi.key, tf: 1})
			d.info.textLen++
		}
	})
	for _, tag := range tags {
		tk.words([]byte(tag), func(w []byte) {
			if wi := tk.info(w); wi.key != 0 {
				all = append(all, termCount{key: wi.key, tag: 1})
				d.info.tagLen++
			}
		})
	}
	tk.all = all
	// Merge the occurrences of each term (a small hash table of positions
	// in d.terms, reused).
	size := 16
	for size < 2*len(all) {
		size *= 2
	}
	if cap(tk.slots) < size {
		tk.slots = make([]int32, size)
	}
	slots := tk.slots[:size]
	clear(slots)
	mask := uint64(size - 1)
	d.terms = make([]termCount, 0, len(all)/2+1)
	for _, c := range all {
		i := c.key & mask
		for {
			s := slots[i]
			if s == 0 {
				d.terms = append(d.terms, c)
				slots[i] = int32(len(d.terms))
				break
			}
			if t := &d.terms[s-1]; t.key == c.key {
				t.tf, t.tag = addSat(t.tf, c.tf), addSat(t.tag, c.tag)
				break
			}
			i = (i + 1) & mask
		}
	}
	return d
}

// addSat adds without overflow.
func addSat(a, b uint16) uint16 {
	if a > 0xffff-b {
		return 0xffff
	}
	return a + b
}

// bodyOf returns the text of a memory file's content (after the
// frontmatter), nil when it has none.
func bodyOf(content []byte) []byte {
	_, body, _, err := frontmatter.Block(content)
	if err != nil {
		return nil
	}
	return body
}

// analyseAll analyses docs (file contents, nil for a file not read) with
// recs, on a few goroutines, each with its own tokenizer.
func analyseAll(docs [][]byte, recs []record) []docTerms {
	out := make([]docTerms, len(docs))
	workers := min(runtime.GOMAXPROCS(0), max(1, len(docs)/256))
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tk := newTokenizer()
			for {
				a := int(next.Add(64)) - 64
				if a >= len(docs) {
					return
				}
				for i := a; i < min(a+64, len(docs)); i++ {
					r := &recs[i]
					if docs[i] == nil || r.ErrReason != "" {
						out[i].info.flags = docUnparsed
						continue
					}
					out[i] = tk.analyse(bodyOf(docs[i]), r.Tags, r.Created)
					out[i].info.reinforced = r.Reinforced
					if r.Status == StatusSuperseded {
						out[i].info.flags |= docSuperseded
					}
				}
			}
		}()
	}
	wg.Wait()
	return out
}

// buildTerms encodes the terms file of the analysed documents.
func buildTerms(stamp uint64, docs []docTerms) []byte {
	// Two passes: count each term's documents, then fill one array.
	slot := map[uint64]int32{}
	var keys []uint64
	var counts []int32
	var textTotal, tagTotal uint64
	docTable := make([]byte, docEntry*len(docs))
	for ord := range docs {
		d := &docs[ord]
		d.info.put(docTable[docEntry*ord:])
		textTotal += uint64(d.info.textLen)
		tagTotal += uint64(d.info.tagLen)
		for _, c := range d.terms {
			s, ok := slot[c.key]
			if !ok {
				s = int32(len(keys))
				slot[c.key] = s
				keys = append(keys, c.key)
				counts = append(counts, 0)
			}
			counts[s]++
		}
	}
	starts := make([]int, len(keys)+1)
	for s, c := range counts {
		starts[s+1] = starts[s] + int(c)
	}
	all := make([]posting, starts[len(keys)])
	fill := append([]int(nil), starts[:len(keys)]...)
	for ord := range docs {
		for _, c := range docs[ord].terms {
			s := slot[c.key]
			all[fill[s]] = posting{ord: uint32(ord), tf: c.tf, tag: c.tag}
			fill[s]++
		}
		docs[ord].terms = nil // done with: let the collector have it
	}
	lists := func(s int32) []posting { return all[starts[s]:starts[s+1]] }
	slices.Sort(keys)
	var blob enc
	blob.b = make([]byte, 0, 3*len(all)+len(all)/2)
	table := make([]byte, termEntry*len(keys))
	for i, k := range keys {
		l := lists(slot[k])
		start := len(blob.b)
		prev := uint32(0)
		for _, p := range l {
			blob.uv(uint64(p.ord - prev))
			blob.uv(uint64(p.tf))
			blob.uv(uint64(p.tag))
			prev = p.ord
		}
		e := table[termEntry*i:]
		binary.LittleEndian.PutUint64(e, k)
		binary.LittleEndian.PutUint32(e[8:], uint32(start))
		binary.LittleEndian.PutUint32(e[12:], uint32(len(l)))
		binary.LittleEndian.PutUint32(e[16:], crc(blob.b[start:]))
	}
	nblocks := (len(keys) + termBlock - 1) / termBlock
	sums := make([]byte, 0, 4*((len(docs)+docBlock-1)/docBlock))
	for a := 0; a < len(docs); a += docBlock {
		sums = binary.LittleEndian.AppendUint32(sums, crc(docTable[docEntry*a:docEntry*min(a+docBlock, len(docs))]))
	}
	sparse := make([]byte, 0, termSparse*nblocks)
	for j := 0; j < nblocks; j++ {
		block := table[termEntry*termBlock*j : termEntry*min(termBlock*(j+1), len(keys))]
		sparse = append(sparse, block[:12]...) // first key and offset
		sparse = binary.LittleEndian.AppendUint32(sparse, crc(block))
	}
	out := make([]byte, 0, termsHeader+len(sums)+len(docTable)+len(sparse)+len(table)+len(blob.b))
	out = append(out, termsMagic...)
	out = binary.LittleEndian.AppendUint64(out, stamp)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(docs)))
	out = binary.LittleEndian.AppendUint32(out, uint32(len(keys)))
	out = binary.LittleEndian.AppendUint32(out, uint32(nblocks))
	out = binary.LittleEndian.AppendUint32(out, crc(sparse))
	out = binary.LittleEndian.AppendUint32(out, crc(sums))
	out = binary.LittleEndian.AppendUint64(out, textTotal)
	out = binary.LittleEndian.AppendUint64(out, tagTotal)
	out = append(out, sums...)
	out = append(out, docTable...)
	out = append(out, sparse...)
	out = append(out, table...)
	return append(out, blob.b...)
}

// termsFile is an open terms file (from disk or just built).
type termsFile struct {
	stamp               uint64
	n, nkeys, nblocks   int
	sparseSum, sumsSum  uint32
	textTotal, tagTotal uint64
	sumsAt, docsAt      int64
	sparseAt            int64
	tableAt, blobAt     int64
	sums, sparse        []byte   // read when first needed
	docs                [][]byte // blocks of document entries, read when needed
	data                []byte   // the whole file, when held in memory
	f                   *os.File
	size                int64
}

// openTerms reads the header of a terms file (f, or data held in memory).
func openTerms(f *os.File, data []byte, size int64) (*termsFile, bool) {
	tf := &termsFile{f: f, data: data, size: size}
	h, ok := tf.read(0, int64(termsHeader))
	if !ok || string(h[:len(termsMagic)]) != termsMagic {
		return nil, false
	}
	p := h[len(termsMagic):]
	tf.stamp = binary.LittleEndian.Uint64(p)
	n, nkeys, nblocks := int64(binary.LittleEndian.Uint32(p[8:])), int64(binary.LittleEndian.Uint32(p[12:])), int64(binary.LittleEndian.Uint32(p[16:]))
	tf.sparseSum, tf.sumsSum = binary.LittleEndian.Uint32(p[20:]), binary.LittleEndian.Uint32(p[24:])
	tf.textTotal, tf.tagTotal = binary.LittleEndian.Uint64(p[28:]), binary.LittleEndian.Uint64(p[36:])
	if n > maxRecords || nkeys > 1<<28 || nblocks != (nkeys+termBlock-1)/termBlock {
		return nil, false
	}
	tf.n, tf.nkeys, tf.nblocks = int(n), int(nkeys), int(nblocks)
	tf.sumsAt = int64(termsHeader)
	tf.docsAt = tf.sumsAt + 4*((n+docBlock-1)/docBlock)
	tf.sparseAt = tf.docsAt + docEntry*n
	tf.tableAt = tf.sparseAt + termSparse*nblocks
	tf.blobAt = tf.tableAt + termEntry*nkeys
	if tf.blobAt > size {
		return nil, false
	}
	return tf, true
}

func (tf *termsFile) read(off, n int64) ([]byte, bool) {
	if tf.data != nil {
		if off < 0 || n < 0 || off+n > int64(len(tf.data)) {
			return nil, false
		}
		return tf.data[off : off+n], true
	}
	return readAt(tf.f, off, n, tf.size)
}

func (tf *termsFile) close() {
	if tf != nil && tf.f != nil {
		tf.f.Close()
		tf.f = nil
	}
}

// load reads the document sums and the block index, false when they
// cannot be read or do not match their checksums.
func (tf *termsFile) load() bool {
	if tf.sums != nil {
		return true
	}
	sums, ok1 := tf.read(tf.sumsAt, tf.docsAt-tf.sumsAt)
	sparse, ok2 := tf.read(tf.sparseAt, termSparse*int64(tf.nblocks))
	if !ok1 || !ok2 || crc(sums) != tf.sumsSum || crc(sparse) != tf.sparseSum {
		return false
	}
	for j := 1; j < tf.nblocks; j++ { // first keys and offsets rise
		if binary.LittleEndian.Uint64(sparse[termSparse*j:]) <= binary.LittleEndian.Uint64(sparse[termSparse*(j-1):]) ||
			binary.LittleEndian.Uint32(sparse[termSparse*j+8:]) < binary.LittleEndian.Uint32(sparse[termSparse*(j-1)+8:]) {
			return false
		}
	}
	tf.sums, tf.sparse = sums, sparse
	tf.docs = make([][]byte, len(sums)/4)
	return true
}

// need reads the blocks of document entries that hold the documents
// marked in want (a bit per block), false when one cannot be read or does
// not match its checksum. load must have succeeded. Many blocks are read
// in one go, a few one by one.
func (tf *termsFile) need(want []bool) bool {
	var blocks []int
	for b, w := range want {
		if w && tf.docs[b] == nil {
			blocks = append(blocks, b)
		}
	}
	var all []byte
	if 8*len(blocks) > len(tf.docs) {
		var ok bool
		if all, ok = tf.read(tf.docsAt, docEntry*int64(tf.n)); !ok {
			return false
		}
	}
	for _, b := range blocks {
		a, z := b*docBlock, min((b+1)*docBlock, tf.n)
		var raw []byte
		if all != nil {
			raw = all[docEntry*a : docEntry*z]
		} else {
			var ok bool
			if raw, ok = tf.read(tf.docsAt+docEntry*int64(a), docEntry*int64(z-a)); !ok {
				return false
			}
		}
		if crc(raw) != binary.LittleEndian.Uint32(tf.sums[4*b:]) {
			return false
		}
		tf.docs[b] = raw
	}
	return true
}

// blockOf is the block of document entries holding ord.
func blockOf(ord int) int { return ord / docBlock }

// doc returns the entry of document ord, whose block need has read.
func (tf *termsFile) doc(ord int) docInfo {
	return getDoc(tf.docs[ord/docBlock][docEntry*(ord%docBlock):])
}

// postings returns the list of the term with key k (nil if no document
// has it); false when it cannot be used (cut short or damaged). load must
// have succeeded.
func (tf *termsFile) postings(k uint64) ([]posting, bool) {
	blockKey := func(j int) uint64 { return binary.LittleEndian.Uint64(tf.sparse[termSparse*j:]) }
	j := sort.Search(tf.nblocks, func(j int) bool { return blockKey(j) > k }) - 1
	if j < 0 {
		return nil, true
	}
	count := min(termBlock, tf.nkeys-termBlock*j)
	block, ok := tf.read(tf.tableAt+int64(termEntry*termBlock*j), int64(termEntry*count))
	if !ok || crc(block) != binary.LittleEndian.Uint32(tf.sparse[termSparse*j+12:]) ||
		binary.LittleEndian.Uint64(block) != blockKey(j) {
		return nil, false
	}
	i := sort.Search(count, func(i int) bool { return binary.LittleEndian.Uint64(block[termEntry*i:]) >= k })
	if i == count || binary.LittleEndian.Uint64(block[termEntry*i:]) != k {
		return nil, true
	}
	e := block[termEntry*i:]
	off, cnt, sum := int64(binary.LittleEndian.Uint32(e[8:])), binary.LittleEndian.Uint32(e[12:]), binary.LittleEndian.Uint32(e[16:])
	end := tf.size - tf.blobAt
	switch {
	case i+1 < count:
		end = int64(binary.LittleEndian.Uint32(block[termEntry*(i+1)+8:]))
	case j+1 < tf.nblocks:
		end = int64(binary.LittleEndian.Uint32(tf.sparse[termSparse*(j+1)+8:]))
	}
	if end < off || end-off < 3*int64(cnt) { // each posting takes three bytes at least
		return nil, false
	}
	raw, ok := tf.read(tf.blobAt+off, end-off)
	if !ok || crc(raw) != sum {
		return nil, false
	}
	d := &dec{b: raw}
	out := make([]posting, 0, cnt)
	prev := uint64(0)
	for c := uint32(0); c < cnt; c++ {
		prev += d.uv()
		tfText, tag := d.uv(), d.uv()
		if d.bad || prev >= uint64(tf.n) || tfText > 0xffff || tag > 0xffff {
			return nil, false
		}
		out = append(out, posting{ord: uint32(prev), tf: uint16(tfText), tag: uint16(tag)})
	}
	return out, true
}

// timeWord reports whether the lower-case word w says when something
// happens: a month (m), a year from 1900 to 2099 (y), a weekday, or a word
// of relative time (yesterday, ago, weekend, week…).
func timeWord(w []byte) (m time.Month, y int, ok bool) {
	if len(w) == 4 && (w[0] == '1' && w[1] == '9' || w[0] == '2' && w[1] == '0') && isDigit(w[2]) && isDigit(w[3]) {
		return 0, 1000*int(w[0]-'0') + 100*int(w[1]-'0') + 10*int(w[2]-'0') + int(w[3]-'0'), true
	}
	if m, ok := monthNames[string(w)]; ok {
		return m, 0, true
	}
	_, ok = timeWords[string(w)]
	return 0, 0, ok
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

var monthNames = map[string]time.Month{"january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6,
	"july": 7, "august": 8, "september": 9, "october": 10, "november": 11, "december": 12}

var timeWords = map[string]struct{}{
	"monday": {}, "tuesday": {}, "wednesday": {}, "thursday": {}, "friday": {}, "saturday": {}, "sunday": {},
	"mondays": {}, "tuesdays": {}, "wednesdays": {}, "thursdays": {}, "fridays": {}, "saturdays": {}, "sundays": {},
	"yesterday": {}, "today": {}, "tonight": {}, "tomorrow": {}, "ago": {}, "weekend": {}, "weekends": {},
	"week": {}, "weeks": {}, "month": {}, "months": {}, "year": {}, "years": {}, "recently": {},
}
