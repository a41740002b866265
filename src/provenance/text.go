package provenance

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// The printers write the instance's text as it is: the command layer's
// writers escape it on a terminal (src/termsafe).

// WriteList prints held changes, one line each, with the session that
// ended when each was found and why it is held; nothing for none (the
// command layer says so on stderr).
func WriteList(w io.Writer, items []Item) error {
	for _, it := range items {
		ses := it.Sessions[0]
		why := ses.Why
		for _, o := range it.Sessions[1:] {
			if o.Tainted {
				why = append(why, "session "+o.Name+" live then: "+strings.Join(o.Why, ", "))
			}
		}
		status := ""
		if it.Status != Waiting {
			status = " [" + it.Status + "]"
		}
		if _, err := fmt.Fprintf(w, "%-5s %-8s %-8s %s%s\n      session %s (%s, %s): %s\n", it.ID, it.Kind, it.Change,
			it.Path, status, ses.Name, ses.Origin, it.Found.Format("2006-01-02 15:04"), strings.Join(why, "; ")); err != nil {
			return err
		}
	}
	return nil
}

// Change is a held change with the text before and after it, and what is
// in effect at its path now.
type Change struct {
	Item
	BeforeText string `json:"before_text"`
	AfterText  string `json:"after_text"`
	// EffectText is the file at the path now ("" with InEffect false:
	// there is none).
	EffectText string `json:"effect_text"`
	InEffect   bool   `json:"in_effect"`
	// BeforeGone: the change is decided and the store no longer keeps the
	// text before it (nothing in effect or waiting refers to it any more):
	// BeforeText is "".
	BeforeGone bool `json:"before_gone,omitempty"`
	// Conflict: what is in effect is not what the change was held against
	// (a memory's last_accessed aside); approving it is refused, and the
	// diff is three-way.
	Conflict bool `json:"conflict"`
}

// Change returns held change id with its texts and what is in effect.
func (s *Store) Change(id string) (Change, error) {
	if s.sessionList != "" {
		return Change{}, errInSession
	}
	st, err := s.read()
	if err != nil {
		return Change{}, err
	}
	it, err := find(st, id)
	if err != nil {
		return Change{}, err
	}
	before, after, err := s.Content(id)
	gone := false
	if errors.Is(err, errNotKept) && it.Status != Waiting {
		// Decided, and its before no longer kept (prune): the rest shows.
		gone, before, after, err = true, nil, nil, nil
		if isText(it.After) {
			after, err = s.heldText(it)
		}
	}
	if err != nil {
		return Change{}, err
	}
	var cur effect
	if it.Volume != "" {
		// The state volume is not the host's to read: its file was put
		// back to what the session started from, and an approval is
		// checked against that when it is written.
		cur = effect{text: before, exists: it.Before != ""}
	} else if it.Workspace != "" {
		// A workspace's instruction file: Path is relative to it, and
		// an approval checks the file there (checkWorkspace).
		if cur, err = effectAt(safefile.Beneath(it.Workspace), it.Path); err != nil {
			return Change{}, errs.Wrap(errs.Failure, err, "%s: %s in the workspace as it is now", id, it.Path)
		}
	} else if cur, err = s.inEffect(it.Path); err != nil {
		return Change{}, errs.Wrap(errs.Failure, err, "%s: %s as it is now", id, it.Path)
	}
	c := Change{Item: *it, BeforeText: string(before), AfterText: string(after), EffectText: string(cur.text), InEffect: cur.exists, BeforeGone: gone}
	c.Conflict = it.Status == Waiting && it.Volume == "" && !s.asBefore(st, it, cur)
	return c, nil
}

// WriteDiff prints c: for a change waiting against what is in effect, the
// line diff from what is in effect to the held text (- and + lines,
// unchanged lines indented); when what is in effect changed since the
// change was held, a three-way merge of the text before the session (the
// base), what is in effect and the held text, each conflict marked as
// diff3 marks it. A decided change shows the diff it was held as, or,
// once the text before is no longer kept (BeforeGone), the held text
// alone, as added lines, and says so.
func (c Change) WriteDiff(w io.Writer) error {
	it := c.Item
	status := ""
	if it.Status != Waiting {
		status = ", " + it.Status
	}
	fmt.Fprintf(w, "%s: %s %s (session %s%s)\n", it.ID, it.Change, it.Path, it.Sessions[0].Name, status)
	if it.After != "" && !isText(it.After) {
		_, err := fmt.Fprintf(w, "(not text that can be shown: %s; it is kept in provenance/held/%s and can be rejected, not approved)\n", it.After, it.ID)
		return err
	}
	from := c.EffectText
	if it.Status != Waiting {
		from = c.BeforeText
	}
	if c.BeforeGone {
		if _, err := fmt.Fprintf(w, "(the text before is no longer kept: below, the held text alone)\n"); err != nil {
			return err
		}
	}
	lines := lineDiff(splitLines([]byte(from)), splitLines([]byte(c.AfterText)))
	if c.Conflict {
		what := "changed"
		if !c.InEffect {
			what = "was removed"
		} else if it.Before == "" {
			what = "was created"
		}
		fmt.Fprintf(w, "conflict: %s %s since this change was held, so approving it is refused; below, the text before the session\n"+
			"merged with what is in effect and the held text (<<<<<<< in effect, ||||||| before, ======= held, >>>>>>>)\n", it.Path, what)
		lines = merge3(splitLines([]byte(c.BeforeText)), splitLines([]byte(c.EffectText)), splitLines([]byte(c.AfterText)), it.ID)
	}
	for _, l := range lines {
		if _, err := fmt.Fprintln(w, l); err != nil {
			return err
		}
	}
	return nil
}

func splitLines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// maxTable bounds the LCS table (len(a)*len(b) cells) of one diff.
const maxTable = 4 << 20

// lcsMatch returns, for each line of a, the line of b it is matched to in
// a longest common subsequence of a and b (-1: none); beyond maxTable no
// line is matched.
func lcsMatch(a, b []string) []int {
	m := make([]int, len(a))
	for i := range m {
		m[i] = -1
	}
	if len(a)*len(b) > maxTable {
		return m
	}
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] == b[j]:
			m[i] = j
			i, j = i+1, j+1
		case lcs[i][j+1] >= lcs[i+1][j]:
			j++
		default:
			i++
		}
	}
	return m
}

// merge3 merges the changes from base to ours and from base to theirs
// (diff3's algorithm): lines stable in all three are kept; a stretch only
// one side changed takes that side's lines; one both changed alike takes
// them; one they changed differently is a conflict, shown with diff3's
// markers (ours is what is in effect, theirs the held change id). Every
// line is indented by two spaces, as lineDiff's unchanged lines are.
func merge3(base, ours, theirs []string, id string) []string {
	mo, mt := lcsMatch(base, ours), lcsMatch(base, theirs)
	var out []string
	emit := func(ls []string) {
		for _, l := range ls {
			out = append(out, "  "+l)
		}
	}
	i, j, k := 0, 0, 0
	for i < len(base) || j < len(ours) || k < len(theirs) {
		if i < len(base) && mo[i] == j && mt[i] == k {
			out = append(out, "  "+base[i])
			i, j, k = i+1, j+1, k+1
			continue
		}
		// The unstable stretch runs to the next base line matched on both
		// sides (or the ends).
		e, eo, et := i, len(ours), len(theirs)
		for ; e < len(base); e++ {
			if mo[e] >= 0 && mt[e] >= 0 {
				eo, et = mo[e], mt[e]
				break
			}
		}
		b, o, t := base[i:e], ours[j:eo], theirs[k:et]
		switch {
		case equal(o, b):
			emit(t)
		case equal(t, b), equal(o, t):
			emit(o)
		default:
			out = append(out, "<<<<<<< in effect")
			emit(o)
			out = append(out, "||||||| before the session")
			emit(b)
			out = append(out, "=======")
			emit(t)
			out = append(out, ">>>>>>> held ("+id+")")
		}
		i, j, k = e, eo, et
	}
	return out
}

func equal(a, b []string) bool { return slices.Equal(a, b) }

// lineDiff is the longest-common-subsequence diff of a and b; beyond a
// size where that table would be large it shows all of a removed and all
// of b added.
func lineDiff(a, b []string) []string {
	var out []string
	if len(a)*len(b) > maxTable {
		for _, l := range a {
			out = append(out, "- "+l)
		}
		for _, l := range b {
			out = append(out, "+ "+l)
		}
		return out
	}
	// lcs[i][j]: the LCS length of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			out = append(out, "  "+a[i])
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			out = append(out, "- "+a[i])
			i++
		default:
			out = append(out, "+ "+b[j])
			j++
		}
	}
	return out
}
