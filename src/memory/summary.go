package memory

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/hobbs-agent/hobbs/src/instance"
)

// ScopeOf is the scope hobbs memory list and search take from their flags:
// all memories with all, the archive with archive, else the active ones.
func ScopeOf(all, archive bool) Scope {
	switch {
	case all:
		return ScopeAll
	case archive:
		return ScopeArchive
	}
	return ScopeActive
}

// WriteList prints a listing for a reader: a header, then a line per
// memory (id, status, reinforcement, tags or "-", first line), aligned.
func WriteList(w io.Writer, list []Entry) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tREINFORCED\tTAGS\tTEXT")
	for _, e := range list {
		tags := strings.Join(e.Tags, ",")
		if strings.TrimSpace(tags) == "" {
			tags = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", e.ID, e.Status, e.Reinforced, tags, e.Summary)
	}
	return tw.Flush()
}

// WriteHits prints search hits, paths relative to in: a line per matching
// line (id, path:line: text), or with filesOnly a line per memory (id,
// path). A file without an id shows "?".
func WriteHits(w io.Writer, in instance.Instance, hits []Hit, filesOnly bool) {
	for _, h := range hits {
		id := h.ID
		if id == "" {
			id = "?"
		}
		if filesOnly {
			fmt.Fprintf(w, "%s\t%s\n", id, in.Rel(h.Path))
			continue
		}
		for _, l := range h.Lines {
			fmt.Fprintf(w, "%s\t%s:%d: %s\n", id, in.Rel(h.Path), l.Line, l.Text)
		}
	}
}

// WriteSummary prints the counts for a reader, a tab-separated line each:
// the total, per tier, per status, per tag (sorted), and the unreadable
// files when there are any.
func (st *Stats) WriteSummary(w io.Writer) error {
	fmt.Fprintf(w, "total\t%d\n", st.Total)
	fmt.Fprintf(w, "tier\tactive %d\tarchive %d\n", st.Tiers[Active], st.Tiers[Archive])
	fmt.Fprintf(w, "status\tactive %d\tarchived %d\tsuperseded %d\n", st.Status[StatusActive],
		st.Status[StatusArchived], st.Status[StatusSuperseded])
	for _, t := range slices.Sorted(maps.Keys(st.Tags)) {
		fmt.Fprintf(w, "tag\t%s\t%d\n", t, st.Tags[t])
	}
	if st.Problems > 0 {
		fmt.Fprintf(w, "problems\t%d\n", st.Problems)
	}
	return nil
}

// String is a line of hobbs memory tidy: the id, how long the memory was
// idle against its limit, and its first line.
func (r TidyResult) String() string {
	return fmt.Sprintf("%s\tidle %dd (limit %dd)\t%s", r.ID, r.IdleDays, r.Limit, r.Summary)
}
