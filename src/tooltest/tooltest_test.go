package tooltest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A missing tool outside CI: the test is skipped and the skip noted, with
// the package and the apt-get line.
func TestNeedSkipsAndNotes(t *testing.T) {
	notes := filepath.Join(t.TempDir(), "skipped")
	t.Setenv(EnvSkipped, notes)
	t.Setenv("CI", "")
	t.Setenv("PATH", t.TempDir())
	ran := false
	t.Run("inner", func(t *testing.T) {
		Need(t, "docker-registry")
		ran = true
	})
	if ran {
		t.Fatal("the test went on without its tool")
	}
	b, err := os.ReadFile(notes)
	if err != nil {
		t.Fatal(err)
	}
	want := "  TestNeedSkipsAndNotes/inner (./src/tooltest): docker-registry not installed; sudo apt-get install docker-registry\n"
	if string(b) != want {
		t.Errorf("note %q, want %q", b, want)
	}
}

// In CI a missing tool fails the test; it is not noted as skipped.
func TestNeedFailsInCI(t *testing.T) {
	notes := filepath.Join(t.TempDir(), "skipped")
	t.Setenv(EnvSkipped, notes)
	t.Setenv("CI", "true")
	t.Setenv("PATH", t.TempDir())
	ft := &fakeT{TB: t}
	func() {
		defer func() { _ = recover() }()
		Need(ft, "podman")
	}()
	if !ft.failed || !strings.Contains(ft.msg, "podman not installed; CI installs it (.ci/run): sudo apt-get install podman catatonit") {
		t.Errorf("in CI: failed %v, %q", ft.failed, ft.msg)
	}
	if _, err := os.Stat(notes); err == nil {
		t.Error("a failure in CI was noted as a skip")
	}
}

// fakeT records Fatalf; it stops the caller by panicking, as FailNow's
// Goexit would stop the test.
type fakeT struct {
	testing.TB
	failed bool
	msg    string
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed = true
	f.msg = strings.TrimSpace(fmt.Sprintf(format, args...))
	panic("fatal")
}
