package memory

import (
	"bytes"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"sort"

	"github.com/hobbs-agent/hobbs/src/errs"
)

// SearchOptions describe a search.
type SearchOptions struct {
	Query string
	Regex bool // Query is an RE2 expression (as written); else a case-insensitive literal
	Scope Scope
	Tags  []string // keep memories with any of these tags
	Limit int      // max memories (0 = all)
	Full  bool     // check every file against the index first (see FullCheckEvery)
}

// LineHit is one matching line.
type LineHit struct {
	Line int    `json:"line"`
	Text string `json:"text"`
}

// Hit is a memory file with matching lines. ID is empty for a file that does
// not parse (it is also reported as a problem).
type Hit struct {
	ID     string    `json:"id"`
	Status string    `json:"status,omitempty"`
	Tier   Tier      `json:"tier"`
	Path   string    `json:"path"`
	Lines  []LineHit `json:"lines"`
}

// Compile returns the matcher of a query: a case-insensitive literal, or an
// RE2 expression as written.
func Compile(query string, isRegex bool) (*regexp.Regexp, error) {
	if query == "" {
		return nil, errs.Usagef("empty search query")
	}
	expr := "(?i)" + regexp.QuoteMeta(query)
	if isRegex {
		expr = query
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, errs.Usagef("bad regular expression: %v", err).Advise(BadRegexp)
	}
	return re, nil
}

// requiredLiterals returns folded strings every match of the query must
// contain (each whole), for the trigram prefilter. Empty: cannot narrow.
func requiredLiterals(query string, isRegex bool) [][]byte {
	if !isRegex {
		return [][]byte{fold(nil, []byte(query))}
	}
	re, err := syntax.Parse(query, syntax.Perl)
	if err != nil {
		return nil
	}
	var out [][]byte
	for _, l := range required(re.Simplify()) {
		if len(l) >= 3 {
			out = append(out, fold(nil, []byte(l)))
		}
	}
	return out
}

func required(re *syntax.Regexp) []string {
	switch re.Op {
	case syntax.OpLiteral:
		return []string{string(re.Rune)}
	case syntax.OpCapture, syntax.OpPlus:
		return required(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return required(re.Sub[0])
		}
	case syntax.OpConcat:
		var out []string
		var cur []rune
		for _, sub := range re.Sub {
			if sub.Op == syntax.OpLiteral {
				cur = append(cur, sub.Rune...)
				continue
			}
			if len(cur) > 0 {
				out = append(out, string(cur))
				cur = nil
			}
			out = append(out, required(sub)...)
		}
		if len(cur) > 0 {
			out = append(out, string(cur))
		}
		return out
	}
	return nil
}

// Search finds the memory files with a line matching the query. It reads
// only the files the index cannot rule out.
func (s *Store) Search(opt SearchOptions) ([]Hit, error) {
	re, err := Compile(opt.Query, opt.Regex)
	if err != nil {
		return nil, err
	}
	lits := requiredLiterals(opt.Query, opt.Regex)
	hits := []Hit{}
	for _, t := range opt.Scope.tiers() {
		ix, ords, err := s.searchIndex(t, opt.Full, lits)
		if err != nil {
			return nil, err
		}
		if ix.trusted && !ix.intact(ords) {
			// A record of the trusted archive index is damaged: check every
			// file instead (which drops and re-reads it).
			ix.close()
			if ix, ords, err = s.searchIndex(t, true, lits); err != nil {
				return nil, err
			}
		}
		found := make([]*Hit, len(ords))
		bad := make([]error, len(ords))
		root := s.fs()
		parallel(len(ords), func(k int) {
			r := ix.rec(ords[k])
			if r.Name == "" { // damaged: reported below
				return
			}
			if len(opt.Tags) > 0 && (r.ErrReason != "" || !anyTag(r.Tags, opt.Tags)) {
				return
			}
			p := filepath.Join(ix.dir, r.Name)
			data, err := readMemFile(root, p)
			if err != nil {
				if unsafe(err) {
					bad[k] = err // replaced since the index was checked
				}
				return // or gone since
			}
			lines := matchLines(re, data)
			if len(lines) == 0 {
				return
			}
			found[k] = &Hit{ID: r.ID, Status: r.Status, Tier: t, Path: p, Lines: lines}
		})
		var tierHits []Hit
		for k, err := range bad {
			if err != nil {
				s.report(problemOf("", err))
			}
			if r := ix.rec(ords[k]); r.Name == "" {
				s.report(Problem{Path: ix.problemPath(r), Reason: r.ErrReason})
			}
		}
		for k, h := range found {
			if h == nil {
				continue
			}
			r := ix.rec(ords[k])
			if r.ErrReason != "" {
				s.report(Problem{Path: h.Path, Line: r.ErrLine, Reason: r.ErrReason})
				h.ID, h.Status = "", ""
			}
			tierHits = append(tierHits, *h)
		}
		ix.close()
		sort.Slice(tierHits, func(i, j int) bool { return tierHits[i].Path < tierHits[j].Path })
		hits = append(hits, tierHits...)
	}
	if opt.Limit > 0 && len(hits) > opt.Limit {
		hits = hits[:opt.Limit]
	}
	return hits, nil
}

// searchIndex opens the index of tier t and returns it with the ordinals of
// the files that may match lits.
func (s *Store) searchIndex(t Tier, full bool, lits [][]byte) (*tierIndex, []int, error) {
	ix, err := s.openIndex(t, full, useSome)
	if err != nil {
		return nil, nil, err
	}
	ords, all := ix.candidates(lits)
	if all {
		ords = ords[:0]
		for i := 0; i < ix.n(); i++ {
			if ix.live(i) {
				ords = append(ords, i)
			}
		}
	}
	return ix, ords, nil
}

func matchLines(re *regexp.Regexp, data []byte) []LineHit {
	var out []LineHit
	for n := 1; len(data) > 0; n++ {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if re.Match(line) {
			out = append(out, LineHit{Line: n, Text: string(bytes.TrimRight(line, "\r"))})
		}
	}
	return out
}
