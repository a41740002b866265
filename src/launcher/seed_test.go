package launcher

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/plan"
	"github.com/hobbs-agent/hobbs/src/playbook"
)

// seedSession is a headless run's session whose engine is the FAKE docker
// CLI body, with its session files' directory made.
func seedSession(t *testing.T, body string) (*Session, func() []string, *[]string) {
	t.Helper()
	e, calls := scriptEngine(t, body)
	in, _ := instance.At(t.TempDir())
	pol := goldenPolicy(t, "{}\n")
	g, err := playbook.ComputeAllowance("weekly", filepath.Join(in.Root, "playbooks", "weekly.md"),
		playbook.Meta{Stage: "supervised", Run: &playbook.Run{Hosts: []string{}, Secrets: []string{}, Tools: []string{"Read"}}}, pol)
	if err != nil {
		t.Fatal(err)
	}
	h := goldenHost()
	h.Instance = in.Root
	p, err := plan.New(config.Default(), plan.RunSpec{Kind: plan.KindPlaybook, Name: "run1", Image: "hobbs:local", Policy: pol, Host: h, Playbook: &g})
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	s := &Session{Engine: e, Instance: in, Name: "run1", owner: Owner(), filesDir: t.TempDir(),
		Progress: func(f string, a ...any) { said = append(said, f) }, plan: p}
	if err := os.WriteFile(filepath.Join(s.filesDir, "claude-credentials"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return s, calls, &said
}

func (s *Session) seeded(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.filesDir, "claude-credentials"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The sign-in reaches a run's session file by the plan's seed container,
// which mounts the state volume read-only; a missing volume or sign-in
// leaves the file empty and starts nothing; a sign-in too large or not a
// JSON object is left out, said so; an engine that cannot be reached ends
// the run.
func TestSeedClaude(t *testing.T) {
	const creds = `{"claudeAiOauth":{"accessToken":"a","refreshToken":"r"}}`
	s, calls, said := seedSession(t, `case "$1" in
volume) exit 0;;
run) echo '`+creds+`';;
esac`)
	if err := s.seedClaude(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := s.seeded(t); got != creds {
		t.Errorf("seeded %q", got)
	}
	c := calls()
	if len(c) != 2 || c[0] != "volume inspect "+s.plan.Claude.State.Volume || !strings.HasPrefix(c[1], "run --pull never --rm ") ||
		!strings.Contains(c[1], "--network none") || !strings.Contains(c[1], ",target=/seed,ro") ||
		!strings.HasSuffix(c[1], "--entrypoint cat hobbs:local /seed/.credentials.json") || strings.Contains(c[1], "--name") {
		t.Errorf("calls %q", c)
	}
	if len(*said) != 0 {
		t.Errorf("said %q", *said)
	}

	for _, c := range []struct {
		name, body, warn string
		runs             bool
	}{
		{"no volume", `echo "Error: No such volume: $3" >&2; exit 1`, "", false},
		{"no sign-in", `[ "$1" = volume ] && exit 0; echo "cat: can't open '/seed/.credentials.json': No such file or directory" >&2; exit 1`, "", true},
		{"too large", `[ "$1" = volume ] && exit 0; i=0; while [ $i -lt 3000 ]; do echo '{"x":"0123456789012345678901234567890123456789"}'; i=$((i+1)); done`, "larger than", true},
		{"not an object", `[ "$1" = volume ] && exit 0; echo '["a"]'`, "not a JSON object", true},
		{"other failure", `[ "$1" = volume ] && exit 0; echo "Error: something else" >&2; exit 125`, "could not read", true},
	} {
		s, calls, said := seedSession(t, c.body)
		if err := s.seedClaude(context.Background()); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		if got := s.seeded(t); got != "" {
			t.Errorf("%s: seeded %q", c.name, got)
		}
		if ran := len(calls()) == 2; ran != c.runs {
			t.Errorf("%s: the seed ran: %v, want %v (%q)", c.name, ran, c.runs, calls())
		}
		if w := strings.Join(*said, "\n"); c.warn == "" && w != "" || !strings.Contains(w, c.warn) {
			t.Errorf("%s: said %q, want %q", c.name, w, c.warn)
		}
	}
	s, _, _ = seedSession(t, `[ "$1" = volume ] && exit 0; echo "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?" >&2; exit 1`)
	if err := s.seedClaude(context.Background()); err == nil {
		t.Error("an unreachable engine was not an error")
	}
}

// In the agent's container the sign-in is copied into the run's fresh
// directory once, mode 0600; an empty or missing file copies nothing.
func TestSeedClaudeState(t *testing.T) {
	dir, src := t.TempDir(), filepath.Join(t.TempDir(), "claude-credentials.json")
	if err := seedClaudeState(src, dir); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(src, nil, 0o600)
	if err := seedClaudeState(src, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, plan.ClaudeCredentials)); !os.IsNotExist(err) {
		t.Fatalf("an empty sign-in was copied: %v", err)
	}
	os.WriteFile(src, []byte(`{"a":1}`), 0o600)
	for range 2 {
		if err := seedClaudeState(src, dir); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(filepath.Join(dir, plan.ClaudeCredentials))
	if b, _ := os.ReadFile(filepath.Join(dir, plan.ClaudeCredentials)); err != nil || string(b) != `{"a":1}` || fi.Mode().Perm() != 0o600 {
		t.Errorf("copied %q %v", b, err)
	}
}
