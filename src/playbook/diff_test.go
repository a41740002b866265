package playbook

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

func TestWriteUnified(t *testing.T) {
	a := "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\neleven\ntwelve\n"
	b := "one\n2\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\neleven\ntwelve\nthirteen\n"
	var w strings.Builder
	if !writeUnified(&w, "a", "b", a, b) {
		t.Fatal("no difference found")
	}
	want := `--- a
+++ b
@@ -1,5 +1,5 @@
 one
-two
+2
 three
 four
 five
@@ -10,3 +10,4 @@
 ten
 eleven
 twelve
+thirteen
`
	if w.String() != want {
		t.Errorf("got\n%s\nwant\n%s", w.String(), want)
	}
	if writeUnified(&w, "a", "b", a, a) {
		t.Error("equal texts differ")
	}
	w.Reset()
	writeUnified(&w, "a", "b", "", "x\ny")
	if w.String() != "--- a\n+++ b\n@@ -0,0 +1,2 @@\n+x\n+y\n\\ No newline at end of file\n" {
		t.Errorf("from nothing: %q", w.String())
	}
}

// The edit script turns a into b, and is as short as the longest common
// subsequence allows (checked against a dynamic-programming LCS).
func TestDiffLinesIsMinimal(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 300; i++ {
		a, b := randLines(r), randLines(r)
		es := diffLines(a, b)
		var ga, gb []string
		kept := 0
		for _, e := range es {
			if e.op != '+' {
				ga = append(ga, e.line)
			}
			if e.op != '-' {
				gb = append(gb, e.line)
			}
			if e.op == ' ' {
				kept++
			}
		}
		if fmt.Sprint(ga) != fmt.Sprint(a) || fmt.Sprint(gb) != fmt.Sprint(b) {
			t.Fatalf("script does not turn %v into %v: %v", a, b, es)
		}
		if kept != lcs(a, b) {
			t.Fatalf("%v → %v: kept %d lines, the LCS is %d", a, b, kept, lcs(a, b))
		}
	}
}

func randLines(r *rand.Rand) []string {
	out := make([]string, r.Intn(12))
	for i := range out {
		out[i] = string(rune('a' + r.Intn(4)))
	}
	return out
}

func lcs(a, b []string) int {
	t := make([][]int, len(a)+1)
	for i := range t {
		t[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				t[i][j] = t[i+1][j+1] + 1
			} else {
				t[i][j] = max(t[i+1][j], t[i][j+1])
			}
		}
	}
	return t[0][0]
}
