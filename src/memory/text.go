package memory

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// CandidateThreshold is the similarity from which Add lists an existing
// memory as a close match.
const CandidateThreshold = 0.5

// Normalize lower-cases s and turns every run of characters that are not
// letters or digits into a single space, trimmed. Two memories with equal
// normalised text are the same memory.
func Normalize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = false
			b.WriteRune(unicode.ToLower(r))
		} else {
			space = true
		}
	}
	return b.String()
}

// words returns the set of words of normalised text.
func words(norm string) map[string]struct{} {
	set := map[string]struct{}{}
	for _, w := range strings.Fields(norm) {
		set[w] = struct{}{}
	}
	return set
}

func jaccard(a, b map[string]struct{}) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 0
	}
	inter := 0
	for w := range a {
		if _, ok := b[w]; ok {
			inter++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}

// Candidate is an existing memory close to a new text.
type Candidate struct {
	ID         string  `json:"id"`
	Similarity float64 `json:"similarity"`
	Summary    string  `json:"summary"`
}

func rankCandidates(c []Candidate) {
	sort.SliceStable(c, func(i, j int) bool {
		if c[i].Similarity != c[j].Similarity {
			return c[i].Similarity > c[j].Similarity
		}
		return c[i].ID > c[j].ID
	})
}

// foldRune maps r to the smallest rune of its simple case-folding orbit, so
// that two runes match case-insensitively (as in RE2's (?i)) exactly when
// they fold to the same rune.
func foldRune(r rune) rune {
	if r < utf8.RuneSelf {
		if 'a' <= r && r <= 'z' {
			return r - 'a' + 'A'
		}
		return r
	}
	min := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f < min {
			min = f
		}
	}
	return min
}

// fold appends the case-folded form of data to dst. Invalid UTF-8 bytes are
// copied as they are.
func fold(dst, data []byte) []byte {
	for i := 0; i < len(data); {
		c := data[i]
		if c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			dst = append(dst, c)
			i++
			continue
		}
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, c)
			i++
			continue
		}
		dst = utf8.AppendRune(dst, foldRune(r))
		i += size
	}
	return dst
}
