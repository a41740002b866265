package playbook

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/instance"
)

func TestGrant(t *testing.T) {
	in := instance.Instance{Root: t.TempDir()}
	run := &Run{Hosts: []string{"api.example.com"}, Secrets: []string{"TOKEN"}, MaxTurns: 5}
	if err := CheckGrant(in, "weekly", run); err == nil || !strings.Contains(err.Error(), "has not been approved") {
		t.Fatalf("no grant: %v", err)
	}
	if _, err := Approve(in, "weekly", run, time.Now(), nil); err != nil {
		t.Fatal(err)
	}
	if err := CheckGrant(in, "weekly", run); err != nil {
		t.Fatalf("approved block refused: %v", err)
	}
	fi, err := os.Stat(filepath.Join(in.Grants(), "weekly.json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("grant file: %v %v", fi, err)
	}
	// Any widening of the block is a change: a host, a secret, a limit.
	for _, changed := range []*Run{
		{Hosts: []string{"api.example.com", "evil.example"}, Secrets: []string{"TOKEN"}, MaxTurns: 5},
		{Hosts: []string{"api.example.com"}, Secrets: []string{"TOKEN", "OTHER"}, MaxTurns: 5},
		{Hosts: []string{"api.example.com"}, Secrets: []string{"TOKEN"}, MaxTurns: 50},
		{Hosts: []string{"api.example.com"}, Secrets: []string{"TOKEN"}, MaxTurns: 5, Tools: []string{"Bash"}},
		nil,
	} {
		if err := CheckGrant(in, "weekly", changed); err == nil || !strings.Contains(err.Error(), "changed since you approved") {
			t.Fatalf("%+v: %v", changed, err)
		}
	}
	// A grant that does not parse is reported and left as it is.
	bad := []byte("{not json")
	os.WriteFile(filepath.Join(in.Grants(), "weekly.json"), bad, 0o600)
	if err := CheckGrant(in, "weekly", run); err == nil || !strings.Contains(err.Error(), "does not parse") {
		t.Fatalf("corrupt grant: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(in.Grants(), "weekly.json")); string(got) != string(bad) {
		t.Fatal("a corrupt grant was rewritten")
	}
	// A link in place of the grants directory is not followed.
	os.RemoveAll(in.Grants())
	os.Symlink(t.TempDir(), in.Grants())
	if _, err := Approve(in, "weekly", run, time.Now(), nil); err == nil {
		t.Fatal("approved through a link")
	}
	if _, err := Approve(in, "../x", run, time.Now(), nil); err == nil {
		t.Fatal("a bad name was approved")
	}
}
