package layer

import (
	"bytes"
)

// Version is one side's content of a path: Exists false is no file. Exec
// is its owner's execute bit (a skill's script).
type Version struct {
	Data   []byte
	Exists bool
	Exec   bool
}

// Absent is the version of a path that has no file.
var Absent = Version{}

// Of is the version holding b.
func Of(b []byte) Version { return Version{Data: b, Exists: true} }

// Equal reports whether v and w hold the same text (both absent, or the
// same bytes); the execute bit is not compared.
func (v Version) Equal(w Version) bool {
	return v.Exists == w.Exists && bytes.Equal(v.Data, w.Data)
}

// Merger merges one path's three versions: base (what the layer started
// from), ours (what is in effect now) and theirs (what the layer holds). It
// returns the merged version, or ok false when the two sides' changes
// conflict. It is called only when each side differs from base (the other
// cases are decided by Merge3 itself).
type Merger func(base, ours, theirs Version) (merged Version, ok bool)

// Merge3 decides one path three-way: a side that did not change from base
// yields to the other, the same change on both sides is taken once, and
// anything else is by's to merge (Lines when by is nil). The execute bit
// merges apart from the text (mergeExec). It returns the version to put in
// effect and whether it conflicts.
func Merge3(base, ours, theirs Version, by Merger) (merged Version, ok bool) {
	switch {
	case theirs.Equal(base), theirs.Equal(ours):
		merged, ok = ours, true
	case ours.Equal(base):
		merged, ok = theirs, true
	default:
		if by == nil {
			by = Text
		}
		merged, ok = by(base, ours, theirs)
	}
	if ok && merged.Exists {
		merged.Exec = mergeExec(base, ours, theirs)
	}
	return merged, ok
}

// mergeExec is the merged execute bit: for a file both sides made, set
// when either side set it; otherwise theirs when theirs set or cleared it
// (or made the file), else ours.
func mergeExec(base, ours, theirs Version) bool {
	switch {
	case !base.Exists && ours.Exists && theirs.Exists:
		return ours.Exec || theirs.Exec
	case theirs.Exists && (!base.Exists || theirs.Exec != base.Exec):
		return theirs.Exec
	case ours.Exists:
		return ours.Exec
	}
	return theirs.Exec
}

// Text is the Merger of plain text files: a removal on one side and a
// change on the other conflict; otherwise Lines.
func Text(base, ours, theirs Version) (Version, bool) {
	if !ours.Exists || !theirs.Exists {
		return Version{}, false
	}
	b, ok := Lines(base.Data, ours.Data, theirs.Data)
	if !ok {
		return Version{}, false
	}
	return Of(b), true
}

// maxLineProduct bounds the work of one line diff (lines of base times
// lines of a side); larger files merge only when Lines's cheap cases hold.
const maxLineProduct = 16 << 20

// Lines merges text line-wise (diff3): a stretch of lines changed on one
// side only takes that side's lines; the same stretch changed on both sides
// differently is a conflict (ok false). When base is a prefix of both sides
// (a log appended to on both), the result is ours followed by what theirs
// appended.
func Lines(base, ours, theirs []byte) ([]byte, bool) {
	if bytes.HasPrefix(ours, base) && bytes.HasPrefix(theirs, base) && len(base) > 0 && endsLine(base) {
		out := append(append([]byte{}, ours...), theirs[len(base):]...)
		return out, true
	}
	b, o, t := split(base), split(ours), split(theirs)
	if len(b)*len(o) > maxLineProduct || len(b)*len(t) > maxLineProduct {
		return nil, false
	}
	mo, mt := match(b, o), match(b, t)
	var out [][]byte
	i, oi, ti := 0, 0, 0 // next unconsumed line of base, ours, theirs
	for {
		// The next base line kept (in order) on both sides.
		j := i
		for j < len(b) && (mo[j] < 0 || mt[j] < 0 || mo[j] < oi || mt[j] < ti) {
			j++
		}
		oe, te := len(o), len(t)
		if j < len(b) {
			oe, te = mo[j], mt[j]
		}
		bc, oc, tc := b[i:j], o[oi:oe], t[ti:te]
		switch {
		case same(oc, bc):
			out = append(out, tc...)
		case same(tc, bc), same(oc, tc):
			out = append(out, oc...)
		default:
			return nil, false
		}
		if j == len(b) {
			break
		}
		out = append(out, b[j])
		i, oi, ti = j+1, oe+1, te+1
	}
	return bytes.Join(out, nil), true
}

func endsLine(b []byte) bool { return len(b) > 0 && b[len(b)-1] == '\n' }

// split cuts b into lines, each with its newline (the last may have none).
func split(b []byte) [][]byte {
	if len(b) == 0 {
		return nil
	}
	return bytes.SplitAfter(b, []byte("\n"))[:bytes.Count(b, []byte("\n"))+boolInt(!endsLine(b))]
}

func boolInt(v bool) int {
	if v {
		return 1
	}
	return 0
}

func same(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// match returns, for each line of a, the index of the line of b it is
// matched to in a longest common subsequence, or -1.
func match(a, b [][]byte) []int {
	m := make([]int, len(a))
	for i := range m {
		m[i] = -1
	}
	// Common prefix and suffix first: most edits are small.
	p := 0
	for p < len(a) && p < len(b) && bytes.Equal(a[p], b[p]) {
		m[p] = p
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && bytes.Equal(a[len(a)-1-s], b[len(b)-1-s]) {
		m[len(a)-1-s] = len(b) - 1 - s
		s++
	}
	a2, b2 := a[p:len(a)-s], b[p:len(b)-s]
	if len(a2) == 0 || len(b2) == 0 {
		return m
	}
	n, k := len(a2), len(b2)
	// lcs[i][j]: the LCS length of a2[i:] and b2[j:].
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, k+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := k - 1; j >= 0; j-- {
			switch {
			case bytes.Equal(a2[i], b2[j]):
				lcs[i][j] = lcs[i+1][j+1] + 1
			case lcs[i+1][j] >= lcs[i][j+1]:
				lcs[i][j] = lcs[i+1][j]
			default:
				lcs[i][j] = lcs[i][j+1]
			}
		}
	}
	for i, j := 0, 0; i < n && j < k; {
		switch {
		case bytes.Equal(a2[i], b2[j]):
			m[p+i] = p + j
			i++
			j++
		case lcs[i+1][j] >= lcs[i][j+1]:
			i++
		default:
			j++
		}
	}
	return m
}
