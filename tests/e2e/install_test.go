package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeInstall: make install, the README's install from a clone of the
// repository, and then hobbs called by name. make install puts the binary
// in a directory of $PATH (~/.local/bin here), where a shell then finds it;
// when no candidate directory is on $PATH it installs into ~/.local/bin and
// fails, printing the PATH line to add, or, when ~/.profile adds the
// directory already, saying to log in again.
func TestMakeInstall(t *testing.T) {
	if setupErr != nil {
		t.Fatalf("setup failed: %v", setupErr)
	}
	goenv := func(k string) string {
		out, err := exec.Command("go", "env", k).Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	// The module and build caches stay the test's: HOME changes, the
	// downloads must not.
	keep := []string{"GOPATH=" + goenv("GOPATH"), "GOMODCACHE=" + goenv("GOMODCACHE"), "GOCACHE=" + goenv("GOCACHE"),
		"GOFLAGS=" + goenv("GOFLAGS"), "GOPROXY=" + goenv("GOPROXY"), "GOTOOLCHAIN=local"}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	sysPath := filepath.Dir(goBin) + ":/usr/local/bin:/usr/bin:/bin"
	run := func(home, path string, args ...string) (string, error) {
		c := exec.Command(args[0], args[1:]...)
		c.Dir = repoRoot
		c.Env = append([]string{"HOME=" + home, "PATH=" + path}, keep...)
		out, err := c.CombinedOutput()
		return string(out), err
	}

	home := t.TempDir()
	bin := filepath.Join(home, ".local", "bin")
	path := bin + ":" + sysPath
	if out, err := run(home, path, "make", "install"); err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	if out, err := run(home, path, "sh", "-c", "command -v hobbs && hobbs version"); err != nil || !strings.Contains(out, filepath.Join(bin, "hobbs")) {
		t.Fatalf("a shell does not find the installed hobbs: %v\n%s", err, out)
	}

	home2 := t.TempDir()
	out, err := run(home2, sysPath, "make", "install")
	if err == nil || !strings.Contains(out, `export PATH="`+filepath.Join(home2, ".local", "bin")+`:$PATH"`) {
		t.Errorf("make install with no candidate on PATH: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(home2, ".local", "bin", "hobbs")); err != nil {
		t.Errorf("not installed into ~/.local/bin: %v", err)
	}

	// A ~/.profile that adds ~/.local/bin once it exists (Debian's does):
	// the advice is to log in again, not a second PATH line.
	home3 := t.TempDir()
	profile := "# set PATH so it includes user's private bin if it exists\nif [ -d \"$HOME/.local/bin\" ] ; then\n    PATH=\"$HOME/.local/bin:$PATH\"\nfi\n"
	if err := os.WriteFile(filepath.Join(home3, ".profile"), []byte(profile), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = run(home3, sysPath, "make", "install")
	if err == nil || !strings.Contains(out, "your ~/.profile adds it once it exists: log in again, or run: . ~/.profile") || strings.Contains(out, "export PATH=") {
		t.Errorf("make install with ~/.profile adding ~/.local/bin: %v\n%s", err, out)
	}
	if out, err := run(home3, sysPath, "sh", "-c", ". \"$HOME/.profile\" && command -v hobbs"); err != nil || !strings.Contains(out, filepath.Join(home3, ".local", "bin", "hobbs")) {
		t.Errorf("after . ~/.profile a shell does not find hobbs: %v\n%s", err, out)
	}
}
