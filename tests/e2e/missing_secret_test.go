package e2e

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMissingVaultEntry: a vault entry config.yaml binds under secrets:
// that is not in the vault ends hobbs run before any container starts,
// naming the variable, the entry and the fix (hobbs vault set NAME), as
// doctor does: without a terminal, with --detach, and on a terminal
// (util-linux's script gives it one), where the background launcher's
// error is the last word, not "ended before it was up".
func TestMissingVaultEntry(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if r := e.hobbs(nil, "vault", "init"); r.code != 0 {
		t.Fatalf("vault init: %s", r.stderr)
	}
	writeFile(t, filepath.Join(e.inst, "config.yaml"), fmt.Sprintf(
		"image: %s\nbase_image: %s\nworkspace: %s\nsecrets:\n  GITHUB_TOKEN:\n    vault: gh-missing\n    hosts: [api.github.com]\n",
		image, baseImage, e.ws))
	const cause = "config.yaml maps GITHUB_TOKEN to vault:gh-missing, which is not in the vault"
	const fix = "hint: store it: hobbs vault set gh-missing, or change secrets.GITHUB_TOKEN.vault in config.yaml"
	check := func(what string, code int, out string) {
		t.Helper()
		t.Logf("%s: exit %d\n%s", what, code, out)
		if code != 3 || !strings.Contains(out, cause) || !strings.Contains(out, fix) {
			t.Errorf("%s: exit %d (want 3), want %q and %q", what, code, cause, fix)
		}
		if strings.Contains(out, "ended before it was up") || strings.Contains(out, "(vault:gh-missing)") {
			t.Errorf("%s hides the cause", what)
		}
	}
	r := e.hobbs(nil, "run", "--name", sessionName(t, "nosecret"), "--", "true")
	check("hobbs run", r.code, r.stderr)
	r = e.hobbs(nil, "run", "--detach", "--name", sessionName(t, "nosecret-d"), "--", "true")
	check("hobbs run --detach", r.code, r.stderr)

	if _, err := exec.LookPath("script"); err != nil {
		t.Fatalf("script (util-linux, Debian bsdutils) gives hobbs run a terminal: %v", err)
	}
	c := e.command(nil, "run", "--name", sessionName(t, "nosecret-t"), "--", "true")
	c.Args = []string{"script", "-qec", shellQuote(c.Args), "/dev/null"}
	c.Path, _ = exec.LookPath("script")
	out, err := c.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	check("hobbs run on a terminal", code, string(out))
	if left := e.leftovers(t); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// shellQuote is args as one sh command line.
func shellQuote(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}
