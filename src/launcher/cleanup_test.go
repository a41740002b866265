package launcher

import (
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/hobbs-agent/hobbs/src/engine"
)

// cleanupEngine is a FAKE docker CLI (a shell script) for cleanup's calls:
// it logs every call; `rm -f AGENT` answers as Docker does while the engine
// is removing an --rm container itself, busy times, then "No such
// container"; every other call succeeds. The real engine is exercised by
// tests/e2e (TestInterrupt).
func cleanupEngine(t *testing.T, agent string, busy int) (engine.CLI, func() []string) {
	t.Helper()
	count := filepath.Join(t.TempDir(), "count")
	return scriptEngine(t, `if [ "$*" = "rm -f `+agent+`" ]; then
	echo x >> `+count+`
	if [ "$(wc -l < `+count+`)" -le `+strconv.Itoa(busy)+` ]; then
		echo "Error response from daemon: removal of container `+agent+` is already in progress" >&2
		exit 1
	fi
	echo "Error: No such container: `+agent+`" >&2
	exit 1
fi
exit 0
`)
}

func made(s *Session, what ...string) {
	for _, w := range what {
		s.made(w)
	}
}

// An interrupted session: the engine is still removing the agent (--rm)
// when cleanup asks; cleanup waits for that, then removes both networks in
// one call. Giving up at the first refusal left the networks behind.
func TestCleanupWaitsForTheEnginesRemoval(t *testing.T) {
	s := testSession(t)
	e, calls := cleanupEngine(t, s.Name, 2)
	s.Engine = e
	made(s, "int", "egress", "proxy", "agent")
	if err := s.cleanup(); err != nil {
		t.Fatalf("cleanup: %v", err)
	}
	c := calls()
	if n := countLine(c, "rm -f "+s.Name); n != 3 {
		t.Errorf("agent removal asked %d times, want 3 (2 refusals, then gone): %q", n, c)
	}
	if !slices.Contains(c, "rm -f "+ProxyName(s.Name)) {
		t.Errorf("proxy not removed: %q", c)
	}
	if want := "network rm " + IntNetwork(s.Name) + " " + EgressNetwork(s.Name); c[len(c)-1] != want || countLine(c, want) != 1 {
		t.Errorf("want one %q after the containers are gone: %q", want, c)
	}
}

// A session whose agent ended normally: the engine removed it (its destroy
// event came), so cleanup does not ask again.
func TestCleanupTrustsTheDestroyEvent(t *testing.T) {
	s := testSession(t)
	e, calls := cleanupEngine(t, s.Name, 0)
	s.Engine = e
	made(s, "int", "egress", "proxy", "agent")
	gone := make(chan struct{})
	close(gone)
	s.ev, s.agentEnded = &events{agentGone: gone}, true
	if err := s.cleanup(); err != nil {
		t.Fatalf("cleanup: %v", err)
	}
	c := calls()
	if countLine(c, "rm -f "+s.Name) != 0 {
		t.Errorf("the removed agent was removed again: %q", c)
	}
	if len(c) != 2 {
		t.Errorf("want the proxy's removal and one network removal, got %q", c)
	}
}

// Only what this run made is removed.
func TestCleanupOnlyWhatItMade(t *testing.T) {
	s := testSession(t)
	e, calls := cleanupEngine(t, s.Name, 0)
	s.Engine = e
	made(s, "int")
	if err := s.cleanup(); err != nil {
		t.Fatalf("cleanup: %v", err)
	}
	if c := calls(); len(c) != 1 || c[0] != "network rm "+IntNetwork(s.Name) {
		t.Errorf("calls: %q", c)
	}
}

func countLine(lines []string, l string) int {
	n := 0
	for _, x := range lines {
		if x == l {
			n++
		}
	}
	return n
}
