package launcher

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/plan"
)

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
		{true, false, "", []string{"logs", plan.ProxyName("s1")}},
		{false, true, "20", []string{"logs", "--follow", "--tail", "20", "s1"}},
		{true, true, "5", []string{"logs", "--follow", "--tail", "5", plan.ProxyName("s1")}},
	} {
		if got := LogsArgs("s1", c.proxy, c.follow, c.tail); !reflect.DeepEqual(got, c.want) {
			t.Errorf("LogsArgs(s1, %v, %v, %q) = %q, want %q", c.proxy, c.follow, c.tail, got, c.want)
		}
	}
}
