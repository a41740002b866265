package tooltest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeTestListsSkips runs the README's test command, make test, with a
// FAKE go (GO=…) that notes a skip as a test would (tooltest.Note through
// HOBBS_SKIPPED): make test passes and ends by naming the skipped test, the
// Go package and how to get the tool; when a go test fails, it still lists
// them and fails. .ci/run calls exactly the README's test command.
func TestMakeTestListsSkips(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		Skip(t, "make not installed", Install("make"))
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	realGo, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	fakeGo := filepath.Join(t.TempDir(), "go")
	script := `#!/bin/sh
# FAKE go for make test: vet passes; build is the real go's (make builds
# its test formatter, tests/gotest); each test run notes a skip as
# tooltest.Note does, then exits with $FAKE_GO_EXIT.
[ "$1" = vet ] && exit 0
[ "$1" = build ] && exec '` + realGo + `' "$@"
printf '  TestPodmanSession (./tests/e2e): podman not installed; sudo apt-get install podman catatonit uidmap slirp4netns\n' >> "$HOBBS_SKIPPED"
exit ${FAKE_GO_EXIT:-0}
`
	if err := os.WriteFile(fakeGo, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(exit string) (string, error) {
		c := exec.Command("make", "-s", "-C", root, "test", "GO="+fakeGo)
		c.Env = append(os.Environ(), "FAKE_GO_EXIT="+exit, "CI=")
		out, err := c.CombinedOutput()
		return string(out), err
	}
	want := "make test: not run here, for want of what CI installs (.ci/run):\n" +
		"  TestPodmanSession (./tests/e2e): podman not installed; sudo apt-get install podman catatonit uidmap slirp4netns\n"
	out, err := run("0")
	if err != nil || !strings.HasSuffix(out, want) || strings.Count(out, "TestPodmanSession") != 1 {
		t.Errorf("make test, a skip in both runs: %v\n%s", err, out)
	}
	out, err = run("1")
	if err == nil || !strings.Contains(out, want) {
		t.Errorf("make test, a failing go test: %v\n%s", err, out)
	}

	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(readme), "```sh\n")
	block, _, _ := strings.Cut(rest, "```")
	lines := strings.Split(strings.TrimSpace(block), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[1], "make test ") {
		t.Fatalf("the README's second command is not make test: %q", lines)
	}
	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ci), "\nexec make test </dev/null\n") {
		t.Error(".ci/run does not end by running make test")
	}
}
