package launcher

import (
	"bufio"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/adrg/xdg"
	"github.com/hobbs-agent/hobbs/src/plan"
	"github.com/hobbs-agent/hobbs/src/userscope"
)

func leaseHome(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("XDG_STATE_HOME", dir)
	xdg.Reload()
	t.Cleanup(xdg.Reload)
	return dir
}

func mustLease(t *testing.T, key string) *scopeLease {
	t.Helper()
	l, err := openLease(key)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.release)
	return l
}

func mustAlone(t *testing.T, l *scopeLease) bool {
	t.Helper()
	a, err := l.alone()
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func listingOf(paths ...string) *userscope.Listing {
	l := &userscope.Listing{Entries: map[string]*userscope.Entry{}}
	for _, p := range paths {
		l.Entries[p] = &userscope.Entry{Path: p, Kind: userscope.File, Size: 2, Hash: hashOf([]byte("x\n")), Data: []byte("x\n")}
	}
	return l
}

// The listing one alone launcher keeps is what the next alone launcher
// takes, once: taking removes it.
func TestLeaseKeepsListingForTheNextStart(t *testing.T) {
	leaseHome(t)
	key := scopeKey("docker", "vol")
	end := mustLease(t, key)
	if !mustAlone(t, end) {
		t.Fatal("a single launcher is not alone")
	}
	if err := end.keep("vol", listingOf("CLAUDE.md", "skills/x/SKILL.md")); err != nil {
		t.Fatal(err)
	}
	end.release()
	start := mustLease(t, key)
	if !mustAlone(t, start) {
		t.Fatal("the next launcher is not alone")
	}
	got := start.take("vol")
	if got == nil || len(got.Entries) != 2 || string(got.Entries["CLAUDE.md"].Data) != "x\n" {
		t.Fatalf("take = %+v, want the kept listing", got)
	}
	if again := start.take("vol"); again != nil {
		t.Error("a kept listing was taken twice")
	}
}

// While another launcher holds the lease, neither is alone, and both keep
// holding it shared (the check lets go of it only for a moment).
func TestLeaseNotAloneWhileAnotherHoldsIt(t *testing.T) {
	leaseHome(t)
	key := scopeKey("docker", "vol")
	a, b := mustLease(t, key), mustLease(t, key)
	if mustAlone(t, a) || mustAlone(t, b) {
		t.Fatal("a launcher counts as alone while another holds the lease")
	}
	if mustAlone(t, a) {
		t.Fatal("a lost its shared hold when its check failed")
	}
	b.release()
	if !mustAlone(t, a) {
		t.Fatal("a is not alone once b let go")
	}
}

// A launcher alone at its end holds the lease exclusively: another's start
// waits until the end has kept what it read and let go.
func TestLeaseAloneEndHoldsOffStarts(t *testing.T) {
	leaseHome(t)
	key := scopeKey("docker", "vol")
	end := mustLease(t, key)
	if !mustAlone(t, end) {
		t.Fatal("not alone")
	}
	started := make(chan *scopeLease)
	go func() {
		l, err := openLease(key)
		if err != nil {
			t.Error(err)
		}
		started <- l
	}()
	select {
	case <-started:
		t.Fatal("a start took the lease while an alone end held it")
	case <-time.After(100 * time.Millisecond):
	}
	if err := end.keep("vol", listingOf("CLAUDE.md")); err != nil {
		t.Fatal(err)
	}
	end.release()
	l := <-started
	defer l.release()
	if !mustAlone(t, l) || l.take("vol") == nil {
		t.Fatal("the start after the end does not find its listing")
	}
}

// A listing kept for another volume, or a file that is not one, is not
// taken (and is removed).
func TestLeaseTakesOnlyItsVolumesListing(t *testing.T) {
	leaseHome(t)
	l := mustLease(t, scopeKey("docker", "vol"))
	if err := l.keep("other", listingOf("CLAUDE.md")); err != nil {
		t.Fatal(err)
	}
	if l.take("vol") != nil {
		t.Error("another volume's listing was taken")
	}
	if _, err := os.Stat(l.listing); !os.IsNotExist(err) {
		t.Error("another volume's listing was left")
	}
	if err := os.WriteFile(l.listing, []byte(`{"Volume":"vol","Listing":{"Entries":`), 0o600); err != nil {
		t.Fatal(err)
	}
	if l.take("vol") != nil {
		t.Error("a torn listing was taken")
	}
	if scopeKey("docker", "vol") == scopeKey("podman", "vol") {
		t.Error("two engines' volumes of one name share a lease")
	}
}

// A start that is not alone, or that found another session's note at its
// start (a dead launcher's agent may still write the volume), removes the
// kept listing and reads the volume.
func TestKeptScopeOnlyWhenCertain(t *testing.T) {
	leaseHome(t)
	key := scopeKey("docker", "vol")
	s := &Session{}
	keep := func() {
		l := mustLease(t, key)
		if !mustAlone(t, l) {
			t.Fatal("not alone")
		}
		if err := l.keep("vol", listingOf("CLAUDE.md")); err != nil {
			t.Fatal(err)
		}
		l.release()
	}
	keep()
	s.othersAtStart = true
	l := mustLease(t, key)
	if got, err := s.keptScope(l, "vol"); got != nil || err != nil {
		t.Fatalf("keptScope with another note = %v, %v; want nil", got, err)
	}
	l.release()
	s.othersAtStart = false
	check := mustLease(t, key)
	if got := check.take("vol"); got != nil {
		t.Fatal("the listing survived a start that did not take it")
	}
	check.release()
	keep()
	a, b := mustLease(t, key), mustLease(t, key)
	if got, err := s.keptScope(a, "vol"); got != nil || err != nil {
		t.Fatalf("keptScope beside a live launcher = %v, %v; want nil", got, err)
	}
	b.release()
	keep2 := a
	if !mustAlone(t, keep2) {
		t.Fatal("a is not alone once b let go")
	}
	if keep2.take("vol") != nil {
		t.Fatal("the listing survived a start that was not alone")
	}
}

// A launcher that dies lets go of its lease.
func TestLeaseReleasedByDeath(t *testing.T) {
	if os.Getenv("HOBBS_LEASE_HOLDER") != "" {
		os.Setenv("XDG_STATE_HOME", os.Getenv("HOBBS_LEASE_STATE"))
		xdg.Reload()
		l, err := openLease(os.Getenv("HOBBS_LEASE_HOLDER"))
		if err != nil {
			os.Exit(2)
		}
		_ = l
		os.Stdout.WriteString("held\n")
		time.Sleep(time.Hour)
		return
	}
	home := leaseHome(t)
	key := scopeKey("docker", "vol")
	cmd := exec.Command(os.Args[0], "-test.run=^TestLeaseReleasedByDeath$")
	cmd.Env = append(os.Environ(), "HOBBS_LEASE_HOLDER="+key, "HOBBS_LEASE_STATE="+home)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "held\n" {
		t.Fatalf("the holder said %q", line)
	}
	l := mustLease(t, key)
	if mustAlone(t, l) {
		t.Fatal("alone beside a live holder")
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if !mustAlone(t, l) {
		t.Fatal("a dead launcher's lease is still held")
	}
}

// An end keeps its listing only when it was alone from its reading on and
// wrote nothing to the volume after it (a tainted session's changes put
// back); else it removes any kept listing. It lets go of the lease.
func TestSettleScopeKeepsOnlyWhatTheVolumeHolds(t *testing.T) {
	leaseHome(t)
	key := scopeKey("", "vol")
	for _, c := range []struct {
		alone, restored, kept bool
	}{{true, false, true}, {true, true, false}, {false, false, false}} {
		l := mustLease(t, key)
		if err := l.keep("vol", listingOf("old")); err != nil {
			t.Fatal(err)
		}
		s := &Session{lease: l, endAlone: c.alone, scopeRestored: c.restored}
		s.plan = planWithVolume("vol")
		s.settleScope(listingOf("new"))
		next := mustLease(t, key)
		if !mustAlone(t, next) {
			t.Fatalf("%+v: the end did not let go of the lease", c)
		}
		got := next.take("vol")
		switch {
		case c.kept && (got == nil || got.Entries["new"] == nil):
			t.Errorf("%+v: the end's listing was not kept (took %v)", c, got)
		case !c.kept && got != nil:
			t.Errorf("%+v: a listing was kept: %v", c, got.Paths())
		}
		next.release()
	}
}

func planWithVolume(vol string) *plan.Plan {
	p := &plan.Plan{}
	p.Agent.Mounts = []plan.Mount{{Type: plan.MountVolume, Source: vol, Target: plan.ClaudeDir}}
	return p
}

// A listing whose names JSON would change (not UTF-8) is not kept: the
// next start reads the volume.
func TestLeaseKeepsNoListingJSONWouldChange(t *testing.T) {
	leaseHome(t)
	l := mustLease(t, scopeKey("docker", "vol"))
	if !mustAlone(t, l) {
		t.Fatal("not alone")
	}
	if err := l.keep("vol", listingOf("CLAUDE.md")); err != nil {
		t.Fatal(err)
	}
	if err := l.keep("vol", listingOf("skills/\xff/SKILL.md")); err == nil {
		t.Fatal("a listing with a name that is not UTF-8 was kept")
	}
	if got := l.take("vol"); got != nil {
		t.Errorf("a kept listing is left: %q", got.Paths())
	}
}
