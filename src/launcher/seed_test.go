package launcher

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
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
		Progress: func(f string, a ...any) { said = append(said, fmt.Sprintf(f, a...)) }, plan: p}
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

// seedTar is the engine's cp stream of one entry named name.
func seedTar(t *testing.T, name string, typ byte, data string) string {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	h := &tar.Header{Name: name, Typeflag: typ, Mode: 0o600, Size: int64(len(data))}
	if typ == tar.TypeSymlink {
		h.Linkname, h.Size = data, 0
	}
	if err := tw.WriteHeader(h); err != nil {
		t.Fatal(err)
	}
	if typ == tar.TypeReg {
		tw.Write([]byte(data))
	}
	tw.Close()
	f := filepath.Join(t.TempDir(), "cp.tar")
	if err := os.WriteFile(f, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// The sign-in reaches a run's session file from the plan's seed container,
// created with the state volume mounted read-only and never started: the
// engine's cp copies the file out and the container is removed. A missing
// volume creates nothing; a missing sign-in leaves the file empty; a
// sign-in too large, not a regular file (a link the agent left) or not a
// JSON object is left out, said so; an engine that cannot be reached ends
// the run.
func TestSeedClaude(t *testing.T) {
	const creds = `{"claudeAiOauth":{"accessToken":"a","refreshToken":"r"}}`
	seed := func(t *testing.T, cp string) (*Session, func() []string, *[]string, error) {
		s, calls, said := seedSession(t, `case "$1" in
volume) exit 0;;
create) echo id;;
rm) exit 0;;
cp) `+cp+`;;
esac`)
		err := s.createSeed(context.Background(), nil)
		if err == nil {
			err = s.seedClaude(context.Background())
		}
		if s.seedGone != nil {
			s.seedGone.wait()
		}
		return s, calls, said, err
	}
	s, calls, said, err := seed(t, "cat "+seedTar(t, ".credentials.json", tar.TypeReg, creds+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.seeded(t); got != creds {
		t.Errorf("seeded %q", got)
	}
	c := calls()
	if len(c) != 4 || c[0] != "volume inspect "+s.plan.Claude.State.Volume || !strings.HasPrefix(c[1], "create --pull never --name run1-seed ") ||
		!strings.Contains(c[1], "--network none") || !strings.Contains(c[1], ",target=/seed,ro") || strings.Contains(c[1], "--rm") ||
		!strings.HasSuffix(c[1], "--entrypoint true hobbs:local") ||
		c[2] != "cp run1-seed:/seed/.credentials.json -" || c[3] != "rm -f run1-seed" {
		t.Errorf("calls %q", c)
	}
	if len(*said) != 0 {
		t.Errorf("said %q", *said)
	}

	big := strings.Repeat(`{"x":"0123456789012345678901234567890123456789"}`, 2000)
	for _, c := range []struct {
		name, cp, warn string
	}{
		{"no sign-in", `echo "Error: Could not find the file /seed/.credentials.json in container run1-seed" >&2; exit 1`, ""},
		{"too large", "cat " + seedTar(t, ".credentials.json", tar.TypeReg, big), "larger than"},
		{"a link", "cat " + seedTar(t, ".credentials.json", tar.TypeSymlink, "/etc/shadow"), "not a regular file"},
		{"a directory", "cat " + seedTar(t, ".credentials.json", tar.TypeDir, ""), "not a regular file"},
		{"not an object", "cat " + seedTar(t, ".credentials.json", tar.TypeReg, `["a"]`), "not a JSON object"},
		{"not a stream", "echo garbage", "could not be read"},
		{"other failure", `echo "Error: something else" >&2; exit 1`, "could not read"},
	} {
		s, calls, said, err := seed(t, c.cp)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		if got := s.seeded(t); got != "" {
			t.Errorf("%s: seeded %q", c.name, got)
		}
		if cs := calls(); len(cs) != 4 || cs[3] != "rm -f run1-seed" {
			t.Errorf("%s: calls %q, want the seed read and removed", c.name, cs)
		}
		if w := strings.Join(*said, "\n"); c.warn == "" && w != "" || !strings.Contains(w, c.warn) {
			t.Errorf("%s: said %q, want %q", c.name, w, c.warn)
		}
	}
	s, calls, _ = seedSession(t, `echo "Error: No such volume: $3" >&2; exit 1`)
	if err := s.createSeed(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if err := s.seedClaude(context.Background()); err != nil || s.seeded(t) != "" || len(calls()) != 1 {
		t.Errorf("no volume: %v, seeded %q, calls %q; want nothing made", err, s.seeded(t), calls())
	}
	if _, _, _, err := seed(t, `echo "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?" >&2; exit 1`); err == nil {
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
