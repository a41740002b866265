package launcher

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/adrg/xdg"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/plan"
)

func TestFindRunning(t *testing.T) {
	list := []SessionInfo{{Name: "work", Containers: []string{"work"}}, {Name: "leftover"}}
	if err := FindRunning(list, "work"); err != nil {
		t.Errorf("running: %v", err)
	}
	for _, name := range []string{"leftover", "none"} {
		if err := FindRunning(list, name); errs.Code(err) != errs.Failure || !strings.Contains(err.Error(), "no running session") {
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

func TestSessionEnvironOutsideASession(t *testing.T) {
	if _, err := os.Stat(plan.SessionEnvFile); err == nil {
		t.Skip("running inside a session")
	}
	env, caErr, err := SessionEnviron(t.TempDir())
	if len(env) != 0 || caErr != nil || err != nil {
		t.Fatalf("%q %v %v", env, caErr, err)
	}
}

func TestSessionInfoRow(t *testing.T) {
	created := time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)
	s := SessionInfo{Name: "hobbs-3f9a2c", Status: "running", Created: created, Workspace: "/home/u/work", OwnerAlive: true}
	if got, want := s.Row(), "hobbs-3f9a2c\trunning\t"+created.Local().Format(time.DateTime)+"\t/home/u/work"; got != want {
		t.Errorf("live: %q, want %q", got, want)
	}
	if n := strings.Count(SessionColumns, "\t"); n != strings.Count(s.Row(), "\t") {
		t.Errorf("%d columns in the header, %d in a row", n+1, strings.Count(s.Row(), "\t")+1)
	}
	if got, want := (SessionInfo{Name: "old", Status: "partial"}).Row(), "old\tpartial (orphan)\t-\t-"; got != want {
		t.Errorf("orphan leftovers: %q, want %q", got, want)
	}
}

func TestLogsArgs(t *testing.T) {
	for _, c := range []struct {
		proxy, follow bool
		tail          string
		want          []string
	}{
		{false, false, "", []string{"logs", "s1"}},
		{true, false, "", []string{"logs", ProxyName("s1")}},
		{false, true, "20", []string{"logs", "--follow", "--tail", "20", "s1"}},
		{true, true, "5", []string{"logs", "--follow", "--tail", "5", ProxyName("s1")}},
	} {
		if got := LogsArgs("s1", c.proxy, c.follow, c.tail); !reflect.DeepEqual(got, c.want) {
			t.Errorf("LogsArgs(s1, %v, %v, %q) = %q, want %q", c.proxy, c.follow, c.tail, got, c.want)
		}
	}
}
