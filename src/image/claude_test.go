package image

import (
	"context"
	"strings"
	"testing"

	"github.com/hobbs-agent/hobbs/src/engine/enginetest"
)

// TestClaudePath: the probe tells a base with claude, one without (its own
// exit status, whatever the shell's is for a missing command: dash's
// `command -v` gives 127) and one it cannot look in (the engine's 127 for
// an image with no sh) apart.
func TestClaudePath(t *testing.T) {
	cases := []struct {
		name, script, want string
		err                bool
	}{
		{"has claude", `echo /usr/local/bin/claude`, "/usr/local/bin/claude", false},
		{"none", `exit 9`, "", false},
		{"no sh", `echo 'exec: "sh": executable file not found in $PATH' >&2; exit 127`, "", true},
		{"silent", `exit 0`, "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, calls := enginetest.Script(t, c.script)
			p, err := ClaudePath(context.Background(), e, "base:1")
			if p != c.want || (err != nil) != c.err {
				t.Fatalf("ClaudePath = %q, %v; want %q, error %v", p, err, c.want, c.err)
			}
			if got := strings.Join(calls(), "\n"); !strings.Contains(got, "--network none") || !strings.Contains(got, "command -v claude || exit 9") {
				t.Errorf("probe ran %q", got)
			}
		})
	}
}

// TestBuildLabelsClaude: a build records what the probe found in its base.
func TestBuildLabelsClaude(t *testing.T) {
	for _, c := range []struct{ probe, label string }{{"exit 9", LabelClaude + "=" + ClaudeNone}, {"echo /opt/claude", LabelClaude + "=/opt/claude"}} {
		e, _ := enginetest.Script(t, `[ "$1" = run ] && { `+c.probe+`; }; exit 0`)
		got := strings.Join(claudeLabel(context.Background(), e, "base:1"), " ")
		if got != "--label "+c.label {
			t.Errorf("probe %q: label %q, want %q", c.probe, got, c.label)
		}
	}
	if has, known := HasClaude(map[string]string{LabelClaude: ClaudeNone}); has || !known {
		t.Errorf("HasClaude(none) = %v, %v", has, known)
	}
	if _, known := HasClaude(map[string]string{}); known {
		t.Error("an unlabelled image is known")
	}
}
