package launcher

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSignInNeeded: no sign-in is no credential variable and no
// .credentials.json (non-empty) in CLAUDE_CONFIG_DIR.
func TestSignInNeeded(t *testing.T) {
	dir := t.TempDir()
	base := []string{"HOME=/nowhere", "CLAUDE_CONFIG_DIR=" + dir}
	if !SignInNeeded(base) {
		t.Error("an empty state directory is signed in")
	}
	for _, v := range credentialVars {
		if SignInNeeded(append(base, v+"=x")) {
			t.Errorf("%s set, yet a sign-in is needed", v)
		}
	}
	p := filepath.Join(dir, ".credentials.json")
	os.WriteFile(p, nil, 0o600)
	if !SignInNeeded(base) {
		t.Error("an empty .credentials.json is a sign-in")
	}
	os.WriteFile(p, []byte(`{"claudeAiOauth":{}}`), 0o600)
	if SignInNeeded(base) {
		t.Error(".credentials.json is there, yet a sign-in is needed")
	}
	if SignInNeeded([]string{"PATH=/bin"}) {
		t.Error("with nowhere to look, it says a sign-in is needed")
	}
}

func TestStartsClaudeSession(t *testing.T) {
	for args, want := range map[string]bool{"claude": true, "/usr/local/bin/claude --continue": true, "claude -p hi": false,
		"claude --print hi": false, "claude --version": false, "sh -c claude": false, "": false} {
		var a []string
		if args != "" {
			a = strings.Fields(args)
		}
		if got := StartsClaudeSession(a); got != want {
			t.Errorf("StartsClaudeSession(%q) = %v", args, got)
		}
	}
}
