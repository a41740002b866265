package errs

import "strings"

// Closest is the one of names nearest to name, for a "did you mean" hint:
// within two edits, or, for a name of three letters or more, one of them a
// prefix of the other; "" when none is that close. The first of equally
// near names wins.
func Closest(name string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		d := editDistance(name, n)
		if d > 2 && len(name) >= 3 && (strings.HasPrefix(n, name) || strings.HasPrefix(name, n)) {
			d = 2
		}
		if d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
