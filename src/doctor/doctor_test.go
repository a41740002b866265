package doctor

import "testing"

func TestSummary(t *testing.T) {
	ok, missing, broken, warn := Result{Status: OK}, Result{Status: Fail, Missing: true}, Result{Status: Fail}, Result{Status: Warn}
	for _, c := range []struct {
		name           string
		rs             []Result
		ok, warn, fail int
		onlyMissing    bool
	}{
		{"healthy", []Result{ok, warn}, 1, 1, 0, false},
		{"only the engine is missing", []Result{ok, missing}, 1, 0, 1, true},
		{"missing and broken", []Result{missing, broken, ok}, 1, 0, 2, false},
		{"broken", []Result{broken}, 0, 0, 1, false},
		{"nothing", nil, 0, 0, 0, false},
	} {
		o, w, f, m := Summary(c.rs)
		if o != c.ok || w != c.warn || f != c.fail || m != c.onlyMissing {
			t.Errorf("%s: Summary = %d, %d, %d, %v; want %d, %d, %d, %v", c.name, o, w, f, m, c.ok, c.warn, c.fail, c.onlyMissing)
		}
	}
}
