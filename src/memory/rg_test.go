package memory

import (
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/tooltest"
)

// TestSearchParityWithRipgrep: for literal queries, hobbs memory search finds
// exactly the files `rg -i -F -l` finds over the same directories (the
// benchmark's "same hits" rule), Unicode case folding included. ripgrep is
// installed by .ci/run; outside CI the test skips without it.
func TestSearchParityWithRipgrep(t *testing.T) {
	rg := tooltest.Need(t, "rg")
	withIndexTimes(t, 30*time.Millisecond, time.Hour)
	c := newCorpus(t, 21)
	c.add(Archive, 200)
	c.add(Active, 60)
	settle()
	queries := []string{"alpha", "BRAVO", "straße", "STRASSE", "ſtar", "star", "kelvin", "K", "naïve", "NAÏVE", "über",
		"x", "golf4", "mem_2025", "status: arch", "lima kilo", "ẞ", "zzz-nothing"}
	for round := 0; round < 2; round++ {
		for _, q := range queries {
			out, err := exec.Command(rg, "-i", "-F", "-l", "--no-config", "-e", q, c.dir(Active), c.dir(Archive)).Output()
			if ee, ok := err.(*exec.ExitError); err != nil && !(ok && ee.ExitCode() == 1) {
				t.Fatalf("rg %q: %v", q, err)
			}
			want := []string{}
			for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				if l != "" {
					want = append(want, filepath.Clean(l))
				}
			}
			s := &Store{In: c.in}
			hits, err := s.Search(SearchOptions{Query: q, Scope: ScopeAll})
			if err != nil {
				t.Fatal(err)
			}
			got := []string{}
			for _, h := range hits {
				got = append(got, h.Path)
			}
			sort.Strings(want)
			sort.Strings(got)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("round %d, %q: hobbs found %d files, rg %d\nhobbs: %v\nrg:    %v", round, q, len(got), len(want), got, want)
			}
		}
		c.mutate(40)
		settle()
	}
}
