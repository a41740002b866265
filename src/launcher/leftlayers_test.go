package launcher

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/adrg/xdg"

	"github.com/hobbs-agent/hobbs/src/provenance"
)

// Which layer directories count as left: named dead by a note or by the
// open provenance record, set aside by a session that took the name, or
// named by neither and old; never one a note or record names as live,
// nor a young one nothing names (a session starting with another state
// directory).
func TestLeftLayersNeedEvidence(t *testing.T) {
	s := leftSession(t)
	root := s.Instance.FS()
	s.Provenance = provenance.New(root, nil)
	host, _ := os.Hostname()
	dead := host + "/999999999/1"
	for _, n := range []string{"noted-dead", "noted-live", "open-dead", "open-live", "young", "old", "x~left-1", s.Name} {
		if err := root.MkdirAll("layers/"+n+"/memory/upper", 0o700); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * leftAge)
	if err := os.Chtimes(filepath.Join(root.Dir(), "layers/old"), old, old); err != nil {
		t.Fatal(err)
	}
	if _, err := record(s.Instance, "noted-dead", dead); err != nil {
		t.Fatal(err)
	}
	if _, err := record(s.Instance, "noted-live", Owner()); err != nil {
		t.Fatal(err)
	}
	alive := func(o string) bool { return o != dead }
	// The live one first: a start ends the records of dead launchers.
	for _, no := range [][2]string{{"open-live", Owner()}, {"open-dead", dead}} {
		if err := s.Provenance.BeginLayer(no[0], provenance.Origin{}, no[1], 0, alive); err != nil {
			t.Fatal(err)
		}
	}
	got := s.leftLayers()
	slices.Sort(got)
	if want := "noted-dead old open-dead x~left-1"; strings.Join(got, " ") != want {
		t.Fatalf("left: %v, want %s", got, want)
	}
}

// A layer directory of the session's own name, left by a dead session, is
// set aside, not taken; one a live launcher may own is an error.
func TestSetAsideLeft(t *testing.T) {
	s := leftSession(t)
	root := s.Instance.FS()
	if err := root.MkdirAll("layers/"+s.Name+"/memory/upper/active", 0o700); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	if _, err := record(s.Instance, s.Name, host+"/1/1"); err != nil { // another host's: alive
		t.Fatal(err)
	}
	if err := s.setAsideLeft(); err == nil {
		t.Fatal("the layers of a session another launcher may run were set aside")
	}
	if _, err := record(s.Instance, s.Name, s.owner); err != nil {
		t.Fatal(err)
	}
	if err := s.setAsideLeft(); err != nil {
		t.Fatal(err)
	}
	ents, _ := root.ReadDir("layers")
	if len(ents) != 1 || !strings.HasPrefix(ents[0].Name(), s.Name+leftMark) {
		t.Fatalf("layers: %v", ents)
	}
}

// leftSession is a test session whose notes go to a state directory of
// its own.
func leftSession(t *testing.T) *Session {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	xdg.Reload()
	t.Cleanup(xdg.Reload)
	return testSession(t)
}
