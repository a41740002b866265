package provenance

import (
	"fmt"
	"io"
	"strings"
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

// Change is a held change with the text before and after it.
type Change struct {
	Item
	BeforeText string `json:"before_text"`
	AfterText  string `json:"after_text"`
}

// Change returns held change id with its texts.
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
	return Change{Item: *it, BeforeText: string(before), AfterText: string(after)}, err
}

// WriteDiff prints c as a line diff (WriteDiff).
func (c Change) WriteDiff(w io.Writer) error {
	return WriteDiff(w, c.Item, []byte(c.BeforeText), []byte(c.AfterText))
}

// WriteDiff prints the change from before to after as a line diff (- and
// + lines, unchanged lines indented).
func WriteDiff(w io.Writer, it Item, before, after []byte) error {
	fmt.Fprintf(w, "%s: %s %s (session %s)\n", it.ID, it.Change, it.Path, it.Sessions[0].Name)
	if strings.HasPrefix(it.After, "large:") || strings.HasPrefix(it.After, "special:") {
		_, err := fmt.Fprintf(w, "(not text that can be shown: %s; it is kept in provenance/held/%s)\n", it.After, it.ID)
		return err
	}
	for _, l := range lineDiff(splitLines(before), splitLines(after)) {
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

// lineDiff is the longest-common-subsequence diff of a and b; beyond a
// size where that table would be large it shows all of a removed and all
// of b added.
func lineDiff(a, b []string) []string {
	var out []string
	if len(a)*len(b) > 4<<20 {
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
		case j < len(b) && (i == len(a) || lcs[i][j+1] >= lcs[i+1][j]):
			out = append(out, "+ "+b[j])
			j++
		default:
			out = append(out, "- "+a[i])
			i++
		}
	}
	return out
}
