package launcher

import (
	"testing"

	"github.com/adrg/xdg"
	"github.com/hobbs-agent/hobbs/src/instance"
)

// TestStopMark: a stop's mark speaks for the launcher it names only, and
// that launcher removes it; it is not a session note (otherRecords).
func TestStopMark(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	xdg.Reload()
	t.Cleanup(xdg.Reload)
	in, _ := instance.At(t.TempDir())
	if stopMarked(in, "s", "host/1/1") {
		t.Fatal("marked before any stop")
	}
	if err := markStopped(in, "s", "host/1/1"); err != nil {
		t.Fatal(err)
	}
	if !stopMarked(in, "s", "host/1/1") || stopMarked(in, "s", "host/2/2") || stopMarked(in, "t", "host/1/1") {
		t.Error("the mark speaks for another launcher or session")
	}
	if others, _ := otherRecords(in, "x"); others {
		t.Error("the stop mark counts as another session's note")
	}
	unmarkStopped(in, "s", "host/2/2")
	if !stopMarked(in, "s", "host/1/1") {
		t.Error("another launcher removed the mark")
	}
	unmarkStopped(in, "s", "host/1/1")
	if stopMarked(in, "s", "host/1/1") {
		t.Error("the mark stayed")
	}
}
