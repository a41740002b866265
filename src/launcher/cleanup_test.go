package launcher

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/hobbs-agent/hobbs/src/engine"
	"github.com/hobbs-agent/hobbs/src/plan"
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

// agentRemovedByEngine sets s up as a session that made everything and
// whose agent ended normally: its command's status came back and the
// engine's destroy event for it arrived (--rm).
func agentRemovedByEngine(s *Session) {
	made(s, "run", "egress", "proxy", "agent")
	gone := make(chan struct{})
	close(gone)
	s.ev, s.agentEnded = &events{agentGone: gone}, true
}

func made(s *Session, what ...string) {
	for _, w := range what {
		s.made(w)
	}
}

// An interrupted session: the engine is still removing the agent (--rm)
// when cleanup asks; cleanup waits for that, then removes the network and
// the socket volume. Giving up at the first refusal left them behind.
func TestCleanupWaitsForTheEnginesRemoval(t *testing.T) {
	s := testSession(t)
	e, calls := cleanupEngine(t, s.Name, 2)
	s.Engine = e
	made(s, "run", "egress", "proxy", "agent")
	if err := s.cleanup(); err != nil {
		t.Fatalf("cleanup: %v", err)
	}
	c := calls()
	if n := countLine(c, "rm -f "+s.Name); n != 3 {
		t.Errorf("agent removal asked %d times, want 3 (2 refusals, then gone): %q", n, c)
	}
	if !slices.Contains(c, "rm -f "+plan.ProxyName(s.Name)) {
		t.Errorf("proxy not removed: %q", c)
	}
	want := "network rm " + plan.EgressNetwork(s.Name)
	nets := slices.Index(c, want)
	if nets < 0 || countLine(c, want) != 1 {
		t.Fatalf("want one %q: %q", want, c)
	}
	vol := slices.Index(c, "volume rm "+s.plan.RunVolume)
	if vol < 0 {
		t.Fatalf("socket volume not removed: %q", c)
	}
	// They go once the agent is gone and the proxy has stopped; the volume
	// once the proxy is removed too.
	last := lastIndex(c, "rm -f "+s.Name)
	stop := slices.Index(c, proxyStopCall(s))
	if last > nets || last > vol {
		t.Errorf("removed before the agent was gone: %q", c)
	}
	if stop < 0 || stop > nets {
		t.Errorf("network removed before the proxy was stopped: %q", c)
	}
	if vol < slices.Index(c, "rm -f "+plan.ProxyName(s.Name)) {
		t.Errorf("volume removed before the proxy: %q", c)
	}
}

func proxyStopCall(s *Session) string {
	return "stop --time " + strconv.Itoa(proxyStopTime) + " " + plan.ProxyName(s.Name)
}

func lastIndex(lines []string, l string) int {
	for i := len(lines) - 1; i >= 0; i-- {
		if lines[i] == l {
			return i
		}
	}
	return -1
}

// The proxy writes a tunnel's audit line when the tunnel closes, and on
// SIGTERM closes what is left and writes every line before it exits. `rm
// -f` sends SIGKILL: lines of tunnels still open (a half-closed one whose
// server has not hung up) or not yet flushed would be lost. So cleanup
// stops the proxy (SIGTERM, with a bound) before anything removes it.
func TestCleanupStopsTheProxyBeforeRemovingIt(t *testing.T) {
	for _, early := range []bool{false, true} {
		s := testSession(t)
		e, calls := cleanupEngine(t, s.Name, 0)
		s.Engine = e
		agentRemovedByEngine(s)
		if early {
			s.stopProxyEarly() // the agent's death was reported
		}
		if err := s.cleanup(); err != nil {
			t.Fatalf("cleanup: %v", err)
		}
		c := calls()
		stop, rm := slices.Index(c, proxyStopCall(s)), slices.Index(c, "rm -f "+plan.ProxyName(s.Name))
		if stop < 0 || rm < 0 || rm < stop {
			t.Errorf("early=%v: want %q, then the removal: %q", early, proxyStopCall(s), c)
		}
		if countLine(c, proxyStopCall(s)) != 1 {
			t.Errorf("early=%v: proxy stopped %d times: %q", early, countLine(c, proxyStopCall(s)), c)
		}
	}
}

// Once the engine reports the proxy's death, its removal does not wait for
// `docker stop` to return (it returns later); the stop's CLI is
// still waited for before cleanup returns.
func TestCleanupRemovesTheProxyOnItsDeath(t *testing.T) {
	s := testSession(t)
	dir := t.TempDir()
	order := filepath.Join(dir, "order")
	e, calls := scriptEngine(t, `case "$*" in
"stop "*) sleep 1; echo stop-returned >> `+order+`;;
"rm -f `+plan.ProxyName(s.Name)+`") echo proxy-removed >> `+order+`;;
esac
exit 0
`)
	s.Engine = e
	agentRemovedByEngine(s)
	died := make(chan struct{})
	close(died)
	s.ev.proxyDied = died
	s.stopProxyEarly()
	if err := s.cleanup(); err != nil {
		t.Fatalf("cleanup: %v", err)
	}
	c := calls()
	rm := slices.Index(c, "rm -f "+plan.ProxyName(s.Name))
	if rm < 0 || slices.Index(c, "volume rm "+s.plan.RunVolume) < rm {
		t.Fatalf("proxy, then volume removal wanted: %q", c)
	}
	// Both lines are there: cleanup waited for the stop's return too.
	if b, _ := os.ReadFile(order); string(b) != "proxy-removed\nstop-returned\n" {
		t.Errorf("want the removal before the stop's return, both before cleanup returns: %q", b)
	}
}

// Podman refuses to remove a network a stopped container is still
// attached to (Docker does not): then the network goes once the proxy is
// removed.
func TestCleanupNetworksAfterTheProxyOnRefusal(t *testing.T) {
	s := testSession(t)
	proxyGone := filepath.Join(t.TempDir(), "proxy-gone")
	e, calls := scriptEngine(t, `case "$*" in
"rm -f `+plan.ProxyName(s.Name)+`") sleep 0.2; touch `+proxyGone+`;;
"network rm "*) [ -e `+proxyGone+` ] || { echo "Error: network is being used" >&2; exit 1; };;
esac
exit 0
`)
	s.Engine = e
	made(s, "egress", "proxy")
	if err := s.cleanup(); err != nil {
		t.Fatalf("cleanup: %v (calls %q)", err, calls())
	}
	c := calls()
	rm := slices.Index(c, "rm -f "+plan.ProxyName(s.Name))
	if i := lastIndex(c, "network rm "+plan.EgressNetwork(s.Name)); i < rm || countLine(c, "network rm "+plan.EgressNetwork(s.Name)) != 2 {
		t.Errorf("network not asked again after the proxy's removal: %q", c)
	}
}

// A session whose agent ended normally: the engine removed it (its destroy
// event came), so cleanup does not ask again.
func TestCleanupTrustsTheDestroyEvent(t *testing.T) {
	s := testSession(t)
	e, calls := cleanupEngine(t, s.Name, 0)
	s.Engine = e
	agentRemovedByEngine(s)
	if err := s.cleanup(); err != nil {
		t.Fatalf("cleanup: %v", err)
	}
	c := calls()
	if countLine(c, "rm -f "+s.Name) != 0 {
		t.Errorf("the removed agent was removed again: %q", c)
	}
	if len(c) != 5 {
		t.Errorf("want the proxy's stop and removal, the network's, the volume's and the layers' removal, got %q", c)
	}
}

// Only what this run made is removed.
func TestCleanupOnlyWhatItMade(t *testing.T) {
	s := testSession(t)
	e, calls := cleanupEngine(t, s.Name, 0)
	s.Engine = e
	made(s, "egress")
	if err := s.cleanup(); err != nil {
		t.Fatalf("cleanup: %v", err)
	}
	if c := calls(); len(c) != 1 || c[0] != "network rm "+plan.EgressNetwork(s.Name) {
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

// Leftovers of a crashed session: once stopped, its --rm agent is being
// removed by the engine, which refuses `rm -f` meanwhile. The removal waits
// for the containers to go, then removes the network and the socket volume:
// giving up at the refusal would leave them behind.
func TestRemoveSessionWaitsForTheEnginesRemoval(t *testing.T) {
	dir := t.TempDir()
	e, calls := scriptEngine(t, `case "$*" in
"ps -aq --filter label=dev.hobbs.session=s1")
	echo x >> `+dir+`/ps
	[ "$(wc -l < `+dir+`/ps)" -le 2 ] && echo abc123
	exit 0;;
"rm -f abc123") echo "Error response from daemon: removal of container abc123 is already in progress" >&2; exit 1;;
"network ls -q --filter label=dev.hobbs.session=s1") echo net1;;
"volume ls -q --filter label=dev.hobbs.session=s1") echo vol1;;
esac
exit 0
`)
	if err := removeSession(context.Background(), e, "s1"); err != nil {
		t.Fatalf("removeSession: %v (calls %q)", err, calls())
	}
	c := calls()
	for _, want := range []string{"network rm net1", "volume rm vol1"} {
		if !slices.Contains(c, want) {
			t.Errorf("no %q: %q", want, c)
		}
	}
}
