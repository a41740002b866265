package launcher

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/egress"
	"github.com/hobbs-agent/hobbs/src/userscope"
)

// The proxy's listing of the state volume is taken only when this end
// asked for it, after the agent: an ask and a listing a dead launcher
// left under the same session name go at the start, an earlier listing
// goes when the end asks, and a listing made for another session is
// refused (the end then reads through the helper).
func TestProxyListingOnlyWhenAsked(t *testing.T) {
	leaseHome(t)
	s, in := layeredSession(t, "listed")
	if s.plan.StateListing == "" {
		t.Fatal("a layered session with the state volume has no proxy listing in its plan")
	}
	listing := filepath.Join(in.Root, filepath.FromSlash(s.plan.StateListing))
	ask := listing + egress.StateAskSuffix
	state := filepath.Join(t.TempDir(), "state")
	if err := os.MkdirAll(filepath.Join(state, "skills", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "CLAUDE.md"), []byte("stale\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// What a dead launcher of the same name left.
	if err := userscope.ListTo(state, ".claude", listing, s.Name, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ask, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tmp := listing + userscope.TmpSuffix
	if err := os.WriteFile(tmp, []byte("{half"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A dead session's, an hour old, and a live one's, just written.
	old := filepath.Join(filepath.Dir(listing), ".state-gone.json.tmp")
	live := filepath.Join(filepath.Dir(listing), ".state-live.json.ask")
	for _, f := range []string{old, live} {
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chtimes(old, time.Now().Add(-2*time.Hour), time.Now().Add(-2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.prepareScope(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.lease.release() })
	for _, f := range []string{listing, ask, tmp, old} {
		if _, err := os.Lstat(f); !os.IsNotExist(err) {
			t.Errorf("%s is still there at the start (%v)", f, err)
		}
	}
	if _, err := os.Lstat(live); err != nil {
		t.Errorf("another live session's ask was removed: %v", err)
	}
	s.scopeBefore = listingOf("CLAUDE.md")
	stopped := spawn(func() error { return nil })

	// Not asked: nothing is taken, even a listing that is there.
	if err := userscope.ListTo(state, ".claude", listing, s.Name, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if l, err := s.listedScope(stopped); err == nil {
		t.Fatalf("a listing nobody asked for was taken: %v", l.Paths())
	}

	// Asked: an earlier listing goes first; the proxy's is taken.
	if err := userscope.ListTo(state, ".claude", listing, s.Name, time.Time{}); err != nil {
		t.Fatal(err)
	}
	s.askScope()
	if !s.scopeAsked {
		t.Fatal("the end did not ask")
	}
	if _, err := os.Lstat(listing); !os.IsNotExist(err) {
		t.Fatalf("the listing from before the ask is still there (%v)", err)
	}
	if _, err := os.Lstat(ask); err != nil {
		t.Fatalf("no ask: %v", err)
	}
	if err := os.WriteFile(filepath.Join(state, "CLAUDE.md"), []byte("after\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := userscope.ListTo(state, ".claude", listing, s.Name, time.Time{}); err != nil {
		t.Fatal(err)
	}
	l, err := s.listedScope(stopped)
	if err != nil {
		t.Fatal(err)
	}
	if e := l.Entries["CLAUDE.md"]; e == nil || string(e.Data) != "after\n" {
		t.Errorf("CLAUDE.md = %+v, want what the proxy listed after the ask", e)
	}
	for _, f := range []string{listing, ask} {
		if _, err := os.Lstat(f); !os.IsNotExist(err) {
			t.Errorf("%s is still there once read (%v)", f, err)
		}
	}

	// Another session's listing is refused.
	if err := userscope.ListTo(state, ".claude", listing, "other", time.Time{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.listedScope(stopped); err == nil {
		t.Error("another session's listing was taken")
	}
}
