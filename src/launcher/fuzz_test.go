package launcher

import (
	"strings"
	"testing"

	"github.com/hobbs-agent/hobbs/src/plan"
)

// Session names become container and network names and CLI arguments: an
// accepted name can never look like a flag, a path or a reference.
func FuzzValidName(f *testing.F) {
	for _, s := range []string{"hobbs-abc", "-rf", "../x", "a/b", "x-proxy", "A", "a:b", "a@b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, n string) {
		if plan.ValidName(n) != nil {
			return
		}
		if n == "" || len(n) > 40 || strings.HasPrefix(n, "-") || strings.ContainsAny(n, "/:@ \t\n=\\") ||
			strings.HasSuffix(n, "-proxy") || strings.ToLower(n) != n {
			t.Fatalf("accepted %q", n)
		}
	})
}

// Owner labels are read back from the engine, where anyone with engine
// access can write them: parsing must not panic, and a label naming this
// host must name a live process to count as alive.
func FuzzOwnerAlive(f *testing.F) {
	f.Add(Owner())
	f.Add("host/1/1")
	f.Add("//")
	f.Add("a/-1/x")
	f.Fuzz(func(t *testing.T, o string) {
		_ = OwnerAlive(o)
	})
}
