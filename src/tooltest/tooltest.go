// Package tooltest is how a test that needs what a fresh machine may lack
// (podman, docker-registry, the age CLI, ripgrep, root…) behaves. In CI
// (CI set to anything), where .ci/run installs every such tool, a missing
// one fails the test: a test there never skips for want of one. Elsewhere
// the test is skipped, and the skip is noted, with the package that brings
// the tool, in the file HOBBS_SKIPPED names: make test prints those notes
// when it ends, so a run on a machine without the tools passes and says
// exactly what it did not run. Main keeps what a package's tests write to
// the XDG state and cache directories out of the user's.
package tooltest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/adrg/xdg"
)

// EnvSkipped names the file skips are noted in (make test sets it).
const EnvSkipped = "HOBBS_SKIPPED"

// Debian are the Debian packages that bring each tool the tests use.
var Debian = map[string]string{
	"podman":          "podman catatonit uidmap slirp4netns",
	"docker-registry": "docker-registry",
	"docker-compose":  "docker-compose",
	"age":             "age",
	"rg":              "ripgrep",
	"git":             "git",
	"systemd-analyze": "systemd",
	"dpkg-deb":        "dpkg",
	"curl":            "curl",
	"script":          "bsdutils",
}

// InCI reports whether the tests run in CI, which installs every tool.
func InCI() bool { return os.Getenv("CI") != "" }

// Need returns the path of tool. When it is missing, t fails in CI and is
// skipped elsewhere, the skip noted.
func Need(t testing.TB, tool string) string {
	t.Helper()
	p, err := exec.LookPath(tool)
	if err == nil {
		return p
	}
	Skip(t, tool+" not installed", Install(tool))
	return ""
}

// Install is how to get tool: the apt-get line of its Debian package.
func Install(tool string) string {
	pkg := Debian[tool]
	if pkg == "" {
		pkg = tool
	}
	return "sudo apt-get install " + pkg
}

// Skip skips t for why (something CI has), noting how to get it; in CI it
// fails t instead.
func Skip(t testing.TB, why, get string) {
	t.Helper()
	if InCI() {
		t.Fatalf("%s; CI installs it (.ci/run): %s", why, get)
	}
	Note(t.Name(), why, get)
	t.Skipf("%s (%s)", why, get)
}

// Note adds to the file HOBBS_SKIPPED names the line saying that test (of
// the Go package in the working directory) did not run, why, and how to
// get what it needs. Without HOBBS_SKIPPED it does nothing.
func Note(test, why, get string) {
	path := os.Getenv(EnvSkipped)
	if path == "" {
		return
	}
	line := fmt.Sprintf("  %s (./%s): %s; %s\n", test, pkgDir(), why, get)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.Write([]byte(line)) // one write: lines of parallel tests stay whole
}

// pkgDir is the working directory (a test's package) relative to the
// module's root.
func pkgDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return "?"
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			rel, err := filepath.Rel(dir, wd)
			if err != nil {
				return wd
			}
			return filepath.ToSlash(rel)
		}
		if filepath.Dir(dir) == dir {
			return strings.TrimPrefix(wd, "/")
		}
	}
}

// Main runs a package's tests (m) with XDG_STATE_HOME and XDG_CACHE_HOME in
// a temporary directory named after prefix, removed afterwards, so what
// they write there (logs, session notes, digests) stays out of the user's;
// a TestMain calls os.Exit with its result.
func Main(m *testing.M, prefix string) int {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	os.Setenv("XDG_STATE_HOME", dir)
	os.Setenv("XDG_CACHE_HOME", dir)
	xdg.Reload()
	return m.Run()
}
