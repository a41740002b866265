package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// policy.yaml planted as a link to another file, or as a FIFO: policy
// allow/deny, the effective policy and the proxy's loader refuse it
// (never follow it, never block on it), and the link's target is unchanged.
func TestPolicyFileLinksAndFIFOsRefused(t *testing.T) {
	in := instance.Instance{Root: t.TempDir()}
	const other = "domains: [host.example.com]\n"
	outside := filepath.Join(t.TempDir(), "other.yaml")
	if err := os.WriteFile(outside, []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(in.Root, ".locks", "policy.lock")
	if err := os.MkdirAll(filepath.Dir(lock), 0o700); err != nil {
		t.Fatal(err)
	}
	// Sanity: a regular file is edited.
	if _, changed, err := Edit(in.FS(), in.Policy(), lock, "domains", "a.example.com", nil); err != nil || !changed {
		t.Fatalf("edit: %v %v", changed, err)
	}
	os.Remove(in.Policy())
	if err := os.Symlink(outside, in.Policy()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Edit(in.FS(), in.Policy(), lock, "domains", "b.example.com", nil); !errors.Is(err, safefile.ErrUnsafe) {
		t.Fatalf("edit through a link: %v", err)
	}
	if _, err := LoadEffective(in.FS(), "default", nil, in.Policy()); !errors.Is(err, safefile.ErrUnsafe) {
		t.Fatalf("effective policy through a link: %v", err)
	}
	if _, err := ParseFile(in.Policy()); !errors.Is(err, safefile.ErrUnsafe) {
		t.Fatalf("ParseFile through a link: %v", err)
	}
	if _, err := LoadFiles(in.Policy()); !errors.Is(err, safefile.ErrUnsafe) {
		t.Fatalf("LoadFiles through a link: %v", err)
	}
	if b, _ := os.ReadFile(outside); string(b) != other {
		t.Fatalf("the link's target changed: %q", b)
	}
	// The lock planted as a link: refused, its target untouched.
	os.Remove(in.Policy())
	os.Remove(lock)
	if err := os.Symlink(outside, lock); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Edit(in.FS(), in.Policy(), lock, "domains", "c.example.com", nil); !errors.Is(err, safefile.ErrUnsafe) {
		t.Fatalf("edit under a linked lock: %v", err)
	}
	// A FIFO does not block.
	if err := syscall.Mkfifo(in.Policy(), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseFile(in.Policy()); !errors.Is(err, safefile.ErrUnsafe) || !strings.Contains(err.Error(), "is a FIFO") {
		t.Fatalf("ParseFile of a FIFO: %v", err)
	}
	if b, _ := os.ReadFile(outside); string(b) != other {
		t.Fatalf("the link's target changed: %q", b)
	}
}

// PolicyFile records each change to the policy (and each refusal), never
// an entry that was already there.
func TestPolicyFileEditsAreAudited(t *testing.T) {
	in := instance.Instance{Root: t.TempDir()}
	os.MkdirAll(filepath.Dir(in.AuditLog()), 0o755)
	f := PolicyFile{Root: in.FS(), Path: in.Policy(), LockPath: in.Lock("policy"), Name: "policy.yaml",
		Audit: audit.New(in.FS(), in.AuditLog())}
	steps := []func() error{
		func() error { _, _, err := f.Allow("API.example.com"); return err },
		func() error { _, _, err := f.Allow("api.example.com"); return err }, // already there
		func() error { _, _, err := f.Deny("tracker.example.org"); return err },
		func() error { _, _, err := f.Allow("tracker.example.org"); return err }, // deny wins: refused
		func() error { _, _, err := f.Remove("api.example.com"); return err },
		func() error { _, _, err := f.Remove("api.example.com"); return err }, // not listed
	}
	wantErr := []bool{false, false, false, true, false, true}
	for i, step := range steps {
		if err := step(); (err != nil) != wantErr[i] {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	b, err := os.ReadFile(in.AuditLog())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e audit.Entry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		if e.Detail["file"] != "policy.yaml" {
			t.Errorf("detail %v", e.Detail)
		}
		got = append(got, fmt.Sprintf("%s %s %s %v", e.Event, e.Subject, e.Outcome, e.Detail["sections"]))
	}
	want := []string{
		"policy.allow api.example.com ok <nil>",
		"policy.deny tracker.example.org ok <nil>",
		"policy.allow tracker.example.org error <nil>",
		"policy.rm api.example.com ok [domains]",
		"policy.rm api.example.com error <nil>",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("events\n%q\nwant\n%q", got, want)
	}
}
