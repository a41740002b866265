package egress

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hobbs-agent/hobbs/src/doctor"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// policy.yaml planted as a link to another file, or as a FIFO: policy
// allow/deny, the effective policy, the proxy's loader and doctor refuse it
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
	rs := checkPolicy(context.Background(), &doctor.Env{Instance: in})
	if len(rs) != 1 || rs[0].Status != doctor.Fail || !strings.Contains(rs[0].Message, "is a symbolic link") {
		t.Fatalf("doctor: %+v", rs)
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
