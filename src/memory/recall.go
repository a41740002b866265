package memory

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
)

// DefaultRecallLimit is how many memories Recall returns unless told.
const DefaultRecallLimit = 10

// RecallOptions describe a recall.
type RecallOptions struct {
	Query string
	Scope Scope
	Tags  []string // keep memories with any of these tags
	Limit int      // at most this many (0: every memory that matches)
}

// Recalled is a memory Recall found.
type Recalled struct {
	ID     string  `json:"id"`
	Status string  `json:"status"`
	Tier   Tier    `json:"tier"`
	Path   string  `json:"path"`
	Score  float64 `json:"score"`
	Text   string  `json:"text"`
}

// The ranking (see docs/memory.md, "Recall"). The BM25 parameters are the
// usual ones (Robertson and Zaragoza, "The Probabilistic Relevance
// Framework: BM25 and Beyond", 2009); the rest are round numbers, each
// worth about one matching word of average weight or less.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
	// A word in the tags counts as much as two in the text, without length
	// normalisation (BM25F).
	tagWeight = 2.0
	// The score is multiplied by (words matched / words asked)^coordPower:
	// a memory that answers every word of a question ranks above one that
	// repeats one of them.
	coordPower = 0.5
	// Each memory gains sameDayWeight × the best score of the memories
	// created the same day: memories stored in one conversation share its
	// context.
	sameDayWeight = 0.5
	// A question about time ("when", "what year", "how long") favours
	// memories that state a time other than their own month and year:
	// timeWeight × f/(f+1) for f such expressions.
	timeWeight = 1.0
	// A month or year in the query favours memories created then.
	dateWeight = 1.0
	// Reinforcement multiplies by 1 + reinforceWeight × log2(1 + reinforced).
	reinforceWeight = 0.1
	// A superseded memory ranks below what replaced it.
	supersededFactor = 0.5
)

// query is a recall query, analysed.
type query struct {
	terms []string
	keys  []uint64
	time  bool // asks when
	month time.Month
	year  int
}

func parseQuery(q string) query {
	var out query
	var words []string
	seen := map[string]bool{}
	newTokenizer().words([]byte(q), func(w []byte) {
		words = append(words, string(w))
		if t := termOf(w); t != "" && !seen[t] {
			seen[t] = true
			out.terms = append(out.terms, t)
			out.keys = append(out.keys, termKey(t))
		}
		if m, y, ok := timeWord(w); ok {
			if m != 0 {
				out.month = m
			}
			if y != 0 {
				out.year = y
			}
		}
	})
	for i, w := range words {
		if w == "when" {
			out.time = true
		}
		if (w == "what" || w == "which" || w == "how") && i+1 < len(words) {
			switch words[i+1] {
			case "year", "month", "date", "day", "week", "long":
				out.time = true
			}
		}
	}
	return out
}

// candidate is a memory that matched at least one term.
type candidate struct {
	tier  int // into the tiers ranked
	ord   int
	info  docInfo
	score float64
}

// tierRank is what one tier contributes to a ranking.
type tierRank struct {
	ix      *tierIndex
	lists   [][]posting       // per query term: the documents of the terms file still as indexed
	dirty   map[int]*docTerms // documents read directly (changed since the terms were built)
	n       int               // live documents
	textLen uint64            // terms in their texts
}

// recallReadAll makes recall read every file instead of the terms file
// (the reference the tests compare the index with).
var recallReadAll = false

// Recall returns the memories most likely to answer opt.Query, best
// first: ranked by BM25F over their text and tags (stemmed, stop words
// left out), then adjusted by the rules above. It reads the terms of the
// index (built with it, see terms.go) and only the files changed since,
// then the files of the memories it returns.
func (s *Store) Recall(opt RecallOptions) ([]Recalled, error) {
	q := parseQuery(opt.Query)
	if len(q.terms) == 0 {
		return nil, errs.Usagef("nothing to recall by in %q: no word but stop words", opt.Query).
			Advise(NothingToRecall)
	}
	if opt.Limit < 0 {
		return nil, errs.Usagef("--limit must be >= 0")
	}
	limit := opt.Limit
	if limit == 0 {
		limit = math.MaxInt
	}
	out, damaged, err := s.recall(q, opt, limit, false)
	if err == nil && damaged {
		// A record of the trusted archive index is damaged: check every
		// file instead (which drops and re-reads it).
		out, _, err = s.recall(q, opt, limit, true)
	}
	return out, err
}

func (s *Store) recall(q query, opt RecallOptions, limit int, full bool) ([]Recalled, bool, error) {
	var tiers []*tierRank
	defer func() {
		for _, tr := range tiers {
			tr.ix.close()
		}
	}()
	for _, t := range opt.Scope.tiers() {
		ix, err := s.openIndex(t, full, useTerms)
		if err != nil {
			return nil, false, err
		}
		tr := &tierRank{ix: ix}
		tiers = append(tiers, tr)
		tr.gather(s, q)
	}
	cands := rank(q, tiers)
	out := []Recalled{}
	seen := map[string]bool{}
	root := s.fs()
	damaged := false
	for _, c := range cands {
		if len(out) == limit {
			break
		}
		tr := tiers[c.tier]
		r := tr.ix.rec(c.ord)
		switch {
		case r.Name == "":
			damaged = damaged || tr.ix.trusted
			s.report(Problem{Path: tr.ix.problemPath(r), Reason: r.ErrReason})
			continue
		case r.ErrReason != "":
			s.report(Problem{Path: tr.ix.problemPath(r), Line: r.ErrLine, Reason: r.ErrReason})
			continue
		case len(opt.Tags) > 0 && !anyTag(r.Tags, opt.Tags), seen[r.ID]:
			continue
		}
		p := filepath.Join(tr.ix.dir, r.Name)
		data, err := readMemFile(root, p)
		if err != nil {
			if unsafe(err) {
				s.report(problemOf(p, err))
			}
			continue // or gone since the check
		}
		// The record says what the file held when the index was checked
		// (as search takes it); the text is the file's now.
		seen[r.ID] = true
		out = append(out, Recalled{ID: r.ID, Status: r.Status, Tier: tr.ix.tier, Path: p,
			Score: math.Round(c.score*1000) / 1000, Text: strings.TrimSpace(string(bodyOf(data)))})
	}
	return out, damaged, nil
}

// gather reads what tier t holds for q: the lists of its terms file, and
// the documents changed since it was built, read from their files. When
// the terms cannot be used (a part damaged), every file is read.
func (tr *tierRank) gather(s *Store, q query) {
	ix := tr.ix
	tf := ix.terms
	brute := recallReadAll || tf == nil || !tf.load()
	if !brute {
		tr.lists = make([][]posting, len(q.keys))
		for i, k := range q.keys {
			l, ok := tf.postings(k)
			if !ok {
				brute = true
				break
			}
			tr.lists[i] = l
		}
	}
	isDirty := func(ord int) bool {
		return ord >= tf.n || ix.flags[ord]&(flagUnindexed|flagRacy) != 0
	}
	clean := func(ord int) bool { return ord < ix.n() && ix.live(ord) && !isDirty(ord) }
	if !brute {
		// What the terms file holds of the documents changed since is
		// taken out (they are read again below); the entries of the
		// others the lists name are read.
		want := make([]bool, len(tf.docs))
		for ord := 0; ord < tf.n; ord++ {
			if !clean(ord) {
				want[blockOf(ord)] = true
			}
		}
		for i, l := range tr.lists {
			kept := l[:0]
			for _, p := range l {
				if o := int(p.ord); clean(o) {
					want[blockOf(o)] = true
					kept = append(kept, p)
				}
			}
			tr.lists[i] = kept
		}
		if brute = !tf.need(want); !brute {
			tr.textLen = tf.textTotal
			for ord := 0; ord < tf.n; ord++ {
				if !clean(ord) {
					tr.textLen -= uint64(tf.doc(ord).textLen)
				}
			}
		}
	}
	var dirty []int
	for ord := 0; ord < ix.n(); ord++ {
		if !ix.live(ord) {
			continue
		}
		tr.n++
		if brute || isDirty(ord) {
			dirty = append(dirty, ord)
		}
	}
	if brute {
		tr.lists, tr.textLen = nil, 0
	}
	// The changed documents, read again (a check has just read some).
	read := make([]*docTerms, len(dirty))
	recs := make([]*record, len(dirty))
	for k, ord := range dirty {
		recs[k] = ix.rec(ord) // decoded here: rec is not safe for concurrent use
	}
	root := s.fs()
	parallel(len(dirty), func(k int) {
		ord, r := dirty[k], recs[k]
		if r.Name == "" || r.ErrReason != "" {
			return
		}
		content, ok := ix.contents[ord]
		if !ok {
			data, err := readMemFile(root, filepath.Join(ix.dir, r.Name))
			if err != nil {
				return
			}
			content = data
		}
		d := newTokenizer().analyse(bodyOf(content), r.Tags, r.Created)
		d.info.reinforced = r.Reinforced
		if r.Status == StatusSuperseded {
			d.info.flags |= docSuperseded
		}
		read[k] = &d
	})
	tr.dirty = map[int]*docTerms{}
	for k, d := range read {
		if d != nil {
			tr.dirty[dirty[k]] = d
			tr.textLen += uint64(d.info.textLen)
		}
	}
}

// rank scores every document that holds a term of q, in every tier, and
// returns them best first.
func rank(q query, tiers []*tierRank) []candidate {
	n, textLen := 0, uint64(0)
	df := make([]int, len(q.keys))
	for _, tr := range tiers {
		n, textLen = n+tr.n, textLen+tr.textLen
		for i := range q.keys {
			if tr.lists != nil {
				df[i] += len(tr.lists[i])
			}
		}
		for _, d := range tr.dirty {
			for i, k := range q.keys {
				if _, ok := d.count(k); ok {
					df[i]++
				}
			}
		}
	}
	avg := 1.0
	if n > 0 && textLen > 0 {
		avg = float64(textLen) / float64(n)
	}
	idf := make([]float64, len(q.keys))
	for i := range idf {
		idf[i] = math.Log(1 + (float64(n)-float64(df[i])+0.5)/(float64(df[i])+0.5))
	}
	bm25 := func(i int, info *docInfo, tf, tag uint16) float64 {
		f := float64(tf)/(1-bm25B+bm25B*float64(info.textLen)/avg) + tagWeight*float64(tag)
		return idf[i] * f * (bm25K1 + 1) / (f + bm25K1)
	}
	var cands []candidate
	for ti, tr := range tiers {
		// Clean documents: term by term through the lists.
		first := len(cands)
		total := 0
		for _, l := range tr.lists {
			total += len(l)
		}
		// ordinal -> 1 + index in cands: an array when the lists name many
		// of the documents, else a map.
		var at []int32
		var atMap map[int]int
		if 8*total > tr.n {
			at = make([]int32, tr.ix.terms.n)
		} else {
			atMap = make(map[int]int, total)
		}
		var matched []int
		for i, l := range tr.lists {
			for _, p := range l {
				o := int(p.ord)
				var k int
				if at != nil {
					k = int(at[o]) - 1
				} else if v, ok := atMap[o]; ok {
					k = v
				} else {
					k = -1
				}
				if k < 0 {
					k = len(cands)
					if at != nil {
						at[o] = int32(k + 1)
					} else {
						atMap[o] = k
					}
					cands = append(cands, candidate{tier: ti, ord: o, info: tr.ix.terms.doc(o)})
					matched = append(matched, 0)
				}
				cands[k].score += bm25(i, &cands[k].info, p.tf, p.tag)
				matched[k-first]++
			}
		}
		for j, m := range matched {
			cands[first+j].score *= math.Pow(float64(m)/float64(len(q.keys)), coordPower)
		}
		// Changed documents: from what was read.
		for o, d := range tr.dirty {
			c := candidate{tier: ti, ord: o, info: d.info}
			m := 0
			for i, k := range q.keys {
				if tc, ok := d.count(k); ok {
					c.score += bm25(i, &c.info, tc.tf, tc.tag)
					m++
				}
			}
			if m > 0 {
				c.score *= math.Pow(float64(m)/float64(len(q.keys)), coordPower)
				cands = append(cands, c)
			}
		}
	}
	for i := range cands {
		if cands[i].info.flags&docUnparsed != 0 {
			cands[i].score = 0
		}
	}
	best := map[int64]float64{} // day -> best score
	for _, c := range cands {
		if c.info.created != 0 {
			day := floorDiv(c.info.created, 86400)
			best[day] = max(best[day], c.score)
		}
	}
	for i := range cands {
		c := &cands[i]
		var created time.Time
		if c.info.created != 0 {
			created = time.Unix(c.info.created, 0).UTC()
			c.score += sameDayWeight * best[floorDiv(c.info.created, 86400)]
		}
		if (q.month != 0 || q.year != 0) && !created.IsZero() &&
			(q.month == 0 || created.Month() == q.month) && (q.year == 0 || created.Year() == q.year) {
			c.score += dateWeight
		}
		if q.time {
			f := float64(c.info.timeRefs)
			c.score += timeWeight * f / (f + 1)
		}
		c.score *= 1 + reinforceWeight*math.Log2(1+float64(c.info.reinforced))
		if c.info.flags&docSuperseded != 0 {
			c.score *= supersededFactor
		}
	}
	kept := cands[:0]
	for _, c := range cands {
		if c.info.flags&docUnparsed == 0 {
			kept = append(kept, c)
		}
	}
	cands = kept
	// Best first; then the newest; then the active tier; then file order.
	sort.Slice(cands, func(i, j int) bool {
		a, b := &cands[i], &cands[j]
		switch {
		case a.score != b.score:
			return a.score > b.score
		case a.info.created != b.info.created:
			return a.info.created > b.info.created
		case a.tier != b.tier:
			return a.tier < b.tier
		}
		return a.ord < b.ord
	})
	return cands
}

// count returns the counts of the term with key k in d.
func (d *docTerms) count(k uint64) (termCount, bool) {
	for _, t := range d.terms {
		if t.key == k {
			return t, true
		}
	}
	return termCount{}, false
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// WriteRecalled prints recalled memories for a reader: id, score, path
// (relative to the instance) and the first line of the text, tab-separated.
// It returns how many it printed.
func WriteRecalled(w io.Writer, in instance.Instance, list []Recalled) int {
	for _, r := range list {
		fmt.Fprintf(w, "%s\t%.2f\t%s: %s\n", r.ID, r.Score, in.Rel(r.Path), summary(r.Text, 100))
	}
	return len(list)
}
