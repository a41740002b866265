package playbook

import (
	"fmt"
	"io"
	"strings"
)

// A line diff, for showing what changed in a playbook since its approval
// (hobbs playbook approve --diff): the shortest edit script between the
// two texts' lines (Myers' O(ND) algorithm), printed as unified hunks with
// three lines of context.

// edit is one line of an edit script: ' ' kept, '-' only in a, '+' only in b.
type edit struct {
	op   byte
	line string
}

// splitText splits s into lines without their "\n" (a last line without
// one is kept, marked as such).
func splitText(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for i, l := range lines {
		if strings.HasSuffix(l, "\n") {
			lines[i] = l[:len(l)-1]
		} else {
			lines[i] = l + "\n\\ No newline at end of file"
		}
	}
	return lines
}

// diffLines returns the shortest edit script turning a into b.
func diffLines(a, b []string) []edit {
	n, m := len(a), len(b)
	max := n + m
	if max == 0 {
		return nil
	}
	off := max + 1
	v := make([]int, 2*max+2)
	var trace [][]int
	for d := 0; d <= max; d++ {
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || k != d && v[off+k-1] < v[off+k+1] {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[off+k] = x
			if x >= n && y >= m {
				trace = append(trace, append([]int(nil), v...))
				return backtrack(trace, a, b, off)
			}
		}
		trace = append(trace, append([]int(nil), v...))
	}
	return nil // not reached: d = n+m always ends
}

// backtrack walks the saved frontiers back from the end to the start.
func backtrack(trace [][]int, a, b []string, off int) []edit {
	x, y := len(a), len(b)
	var out []edit
	for d := len(trace) - 1; d > 0; d-- {
		v := trace[d-1]
		k := x - y
		var pk int
		if k == -d || k != d && v[off+k-1] < v[off+k+1] {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := v[off+pk]
		py := px - pk
		for x > px && y > py {
			x, y = x-1, y-1
			out = append(out, edit{' ', a[x]})
		}
		if x == px {
			y--
			out = append(out, edit{'+', b[y]})
		} else {
			x--
			out = append(out, edit{'-', a[x]})
		}
	}
	for x > 0 && y > 0 {
		x, y = x-1, y-1
		out = append(out, edit{' ', a[x]})
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// writeUnified prints the changes from a to b as unified hunks (context
// lines of each side around each change) under the two labels; nothing
// when they are equal. It reports whether they differed.
func writeUnified(w io.Writer, labelA, labelB, a, b string) bool {
	const context = 3
	es := diffLines(splitText(a), splitText(b))
	changed := false
	for _, e := range es {
		changed = changed || e.op != ' '
	}
	if !changed {
		return false
	}
	fmt.Fprintf(w, "--- %s\n+++ %s\n", labelA, labelB)
	for i := 0; i < len(es); {
		if es[i].op == ' ' {
			i++
			continue
		}
		start := max(i-context, 0)
		end := i
		for j := i; j < len(es); j++ {
			if es[j].op != ' ' {
				end = j
			} else if j-end > 2*context {
				break
			}
		}
		end = min(end+context, len(es)-1)
		la, lb := 1, 1
		for _, e := range es[:start] {
			if e.op != '+' {
				la++
			}
			if e.op != '-' {
				lb++
			}
		}
		na, nb := 0, 0
		for _, e := range es[start : end+1] {
			if e.op != '+' {
				na++
			}
			if e.op != '-' {
				nb++
			}
		}
		if na == 0 {
			la--
		}
		if nb == 0 {
			lb--
		}
		fmt.Fprintf(w, "@@ -%d,%d +%d,%d @@\n", la, na, lb, nb)
		for _, e := range es[start : end+1] {
			fmt.Fprintf(w, "%c%s\n", e.op, e.line)
		}
		i = end + 1
	}
	return true
}
