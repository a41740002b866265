package launcher

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/adrg/xdg"
	"github.com/hobbs-agent/hobbs/src/instance"
)

func TestSessionRecords(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	xdg.Reload()
	t.Cleanup(xdg.Reload)
	in, _ := instance.At(t.TempDir())
	other, _ := instance.At(t.TempDir())
	if others, _ := otherRecords(in, "me"); others {
		t.Fatal("notes reported where none exist")
	}
	if ok, err := record(in, "me", Owner()); !ok || err != nil {
		t.Fatal(ok, err)
	}
	// A running launcher's note of the same name is not taken over.
	if ok, _ := record(in, "me", "someone-else/1/1"); ok {
		t.Error("a live launcher's note was overwritten")
	}
	if others, _ := otherRecords(in, "me"); others {
		t.Error("a session's own note counted as another's")
	}
	record(in, "alive", Owner())
	record(in, "crashed", "host-that-is-this-one-not/1/1")
	host, _ := os.Hostname()
	record(in, "dead", host+"/999999999/1")
	record(other, "elsewhere", host+"/999999999/1")
	others, dead := otherRecords(in, "me")
	if !others || !slices.Equal(dead, []string{"dead"}) {
		t.Errorf("otherRecords = %v %v, want true [dead] (another host's owner counts as alive)", others, dead)
	}
	forgetDead(in, []string{"alive", "dead", "me"})
	left, _ := os.ReadDir(recordDir(in))
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"alive", "crashed", "me"}) {
		t.Errorf("after forgetDead: %v, want [alive crashed me] (live owners keep theirs)", names)
	}
	unrecord(in, "alive")
	unrecord(in, "crashed")
	unrecord(in, "me")
	if others, _ := otherRecords(in, "x"); others {
		t.Error("notes left after unrecord")
	}
	if _, err := os.Stat(filepath.Join(recordDir(other), "elsewhere")); err != nil {
		t.Errorf("another instance's note touched: %v", err)
	}
	// Unreadable notes: ask the engine.
	os.Chmod(recordDir(in), 0)
	defer os.Chmod(recordDir(in), 0o700)
	if os.Getuid() != 0 {
		if others, _ := otherRecords(in, "x"); !others {
			t.Error("unreadable notes taken for none")
		}
	}
}
