package launcher

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/adrg/xdg"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
)

func TestFindRunning(t *testing.T) {
	list := []SessionInfo{{Name: "work", Containers: []string{"work"}}, {Name: "leftover"}}
	if err := FindRunning(list, "work"); err != nil {
		t.Errorf("running: %v", err)
	}
	for _, name := range []string{"leftover", "none"} {
		if err := FindRunning(list, name); errs.Code(err) != errs.Failure || !strings.Contains(err.Error(), "no running session") ||
			errs.AdviceOf(err).Kind != NoRunningSession {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestEndedOutput(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	xdg.Reload()
	t.Cleanup(xdg.Reload)
	in := instance.Instance{Root: t.TempDir()}
	if _, ok := EndedOutput(in, "work", ""); ok {
		t.Fatal("output of a session that left none")
	}
	p := SessionLog(in, "work")
	os.MkdirAll(filepath.Dir(p), 0o700)
	os.WriteFile(p, []byte("one\ntwo\nthree\n"), 0o600)
	for _, c := range []struct{ tail, want string }{
		{"", "one\ntwo\nthree\n"}, {"2", "two\nthree\n"}, {"0", ""}, {"9", "one\ntwo\nthree\n"}, {"all", "one\ntwo\nthree\n"},
	} {
		if got, ok := EndedOutput(in, "work", c.tail); !ok || got != c.want {
			t.Errorf("tail %q: %q %v, want %q", c.tail, got, ok, c.want)
		}
	}
	if got := LastLines("a\nb", 1); got != "b" {
		t.Errorf("without a final newline: %q", got)
	}
}
