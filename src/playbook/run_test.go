package playbook

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/policy"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

const runBlock = `run:
  hosts:
    - api.bank.example
    - "*.Files.Example:8443"
  secrets: [BANK_TOKEN]
  tools: ["Read", "Bash(hobbs *)", "mcp__mail__send"]
  max_turns: 20
  timeout: 15m
  max_cost_usd: 2.5
`

func withFrontmatter(stage, extra string) string {
	return strings.Replace(strings.Replace(good, "stage: manual\n", "stage: "+stage+"\n", 1), "review_every: 14\n", "review_every: 14\n"+extra, 1)
}

func TestParseRunBlock(t *testing.T) {
	d, err := Parse("p.md", []byte(withFrontmatter("autonomous", runBlock)))
	if err != nil {
		t.Fatal(err)
	}
	want := &Run{Hosts: []string{"api.bank.example", "*.files.example:8443"}, Secrets: []string{"BANK_TOKEN"},
		Tools: []string{"Read", "Bash(hobbs *)", "mcp__mail__send"}, MaxTurns: 20, Timeout: "15m", MaxCostUSD: 2.5}
	if !reflect.DeepEqual(d.Meta.Run, want) || len(d.Lint) != 0 {
		t.Fatalf("run = %+v lint %v", d.Meta.Run, d.Lint)
	}
	if d.Meta.Run.TimeoutDuration() != 15*time.Minute || d.Meta.Run.Turns() != 20 {
		t.Fatal("limits")
	}
	// A block without max_cost_usd hashes as it did before the key existed.
	if b, _ := json.Marshal(&Run{Hosts: []string{}, Secrets: []string{}, Tools: []string{}}); strings.Contains(string(b), "max_cost") {
		t.Errorf("an unset cost cap is in the block's JSON: %s", b)
	}
	var none *Run
	if none.Turns() != DefaultMaxTurns || none.TimeoutDuration() != DefaultTimeout {
		t.Fatal("defaults")
	}
}

func TestParseRunBlockErrors(t *testing.T) {
	for _, c := range []struct{ block, want string }{
		{"run: yes\n", "p.md:9: run: must be a mapping"},
		{"run:\n  hosts: api.example.com\n", "p.md:10: run: hosts must be a list"},
		{"run:\n  hosts: [\"https://api.example.com/x\"]\n", "write a host name, not a URL"},
		{"run:\n  hosts: [\"*.com\"]\n", "public suffix"},
		{"run:\n  secrets: [\"BANK-TOKEN\"]\n", "is not a variable name"},
		{"run:\n  tools: [\"Bash(\"]\n", "is not a Claude Code tool name"},
		{"run:\n  max_turns: 0\n", "p.md:10: run: max_turns must be a whole number greater than 0"},
		{"run:\n  max_turns: ten\n", "max_turns must be"},
		{"run:\n  timeout: -5m\n", "timeout must be a duration greater than 0"},
		{"run:\n  timeout: 10\n", "timeout must be a duration"},
		{"run:\n  max_cost_usd: 0\n", "p.md:10: run: max_cost_usd must be a number of US dollars greater than 0"},
		{"run:\n  max_cost_usd: -1\n", "max_cost_usd must be"},
		{"run:\n  max_cost_usd: five\n", "max_cost_usd must be"},
		{"run:\n  max_cost_usd: 25000\n", "at most 10000"},
		{"run:\n  max_cost_usd: .nan\n", "max_cost_usd must be"},
	} {
		_, err := Parse("p.md", []byte(withFrontmatter("supervised", c.block)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want %q", c.block, err, c.want)
		}
	}
}

func TestRunLint(t *testing.T) {
	d, err := Parse("p.md", []byte(withFrontmatter("supervised", "run:\n  hostz: [a.example]\n")))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Lint) != 1 || d.Lint[0].Line != 10 || !strings.Contains(d.Lint[0].Reason, `run: unknown key "hostz"`) {
		t.Fatalf("lint = %v", d.Lint)
	}
	d, err = Parse("p.md", []byte(withFrontmatter("autonomous", "")))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Lint) != 1 || d.Lint[0].Line != 3 || !strings.Contains(d.Lint[0].Reason, "autonomous playbook needs a run: block") {
		t.Fatalf("lint = %v", d.Lint)
	}
}

func TestUpdateKeepsRunBlock(t *testing.T) {
	s := newStore(t)
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.Path("inv"), []byte(withFrontmatter("supervised", runBlock)), 0o644); err != nil {
		t.Fatal(err)
	}
	d, _, err := s.Get("inv")
	if err != nil {
		t.Fatal(err)
	}
	// A body-only revision keeps the run: block.
	if _, err := s.Update("inv", UpdateOptions{Source: []byte(d.Body() + "\nmore\n")}); err != nil {
		t.Fatal(err)
	}
	d2, _, err := s.Get("inv")
	if err != nil || !reflect.DeepEqual(d2.Meta.Run, d.Meta.Run) {
		t.Fatalf("run after body update: %+v %v", d2.Meta.Run, err)
	}
	// A whole-file revision (an edited copy of show) sets it.
	src := strings.Replace(string(d2.Raw()), "max_turns: 20", "max_turns: 25", 1)
	if _, err := s.Update("inv", UpdateOptions{Source: []byte(src)}); err != nil {
		t.Fatal(err)
	}
	d3, _, _ := s.Get("inv")
	if d3.Meta.Run.MaxTurns != 25 || len(d3.Lint) != 0 {
		t.Fatalf("run %+v lint %v", d3.Meta.Run, d3.Lint)
	}
	// The same content again changes nothing.
	if changed, err := s.Update("inv", UpdateOptions{Source: d3.Raw()}); err != nil || changed {
		t.Fatalf("changed=%v err=%v", changed, err)
	}
	// Stage changes and reviews leave the block alone.
	before := string(d3.Raw())
	if _, err := s.SetStage("inv", "autonomous", "ok"); err != nil {
		t.Fatal(err)
	}
	d4, _, _ := s.Get("inv")
	if !strings.Contains(string(d4.Raw()), before[strings.Index(before, "run:"):strings.Index(before, "---\n\n")]) {
		t.Fatalf("run block changed:\n%s", d4.Raw())
	}
}

func TestAllowHost(t *testing.T) {
	s := newStore(t)
	p := writeGood(t, s, "inv")
	res, err := s.AllowHost("inv", "API.Example.com", "the supplier portal")
	if err != nil || !res.Changed || res.Host != "api.example.com" {
		t.Fatalf("%+v %v", res, err)
	}
	data, _ := os.ReadFile(p)
	if !strings.Contains(string(data), "review_every: 14\nrun:\n  hosts: [\"api.example.com\"]\n  secrets: []\n  tools: []\n---\n") ||
		!strings.Contains(string(data), "- 2026-03-04 run: allowed host api.example.com: the supplier portal\n") ||
		!strings.Contains(string(data), "updated: \"2026-03-04\"\n") {
		t.Fatalf("file:\n%s", data)
	}
	// Again: no change, nothing written.
	if res, err := s.AllowHost("inv", "api.example.com", ""); err != nil || res.Changed {
		t.Fatalf("%+v %v", res, err)
	}
	if again, _ := os.ReadFile(p); string(again) != string(data) {
		t.Fatal("file rewritten")
	}
	// An existing block in the middle of the frontmatter: replaced in place,
	// its other keys kept, the keys after it untouched.
	mid := strings.Replace(good, "tags: [finance]\n", "tags: [finance]\n"+runBlock+"# my comment\n", 1)
	if err := os.WriteFile(p, []byte(mid), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AllowHost("inv", "*.cdn.example", ""); err != nil {
		t.Fatal(err)
	}
	d, _, err := s.Get("inv")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"api.bank.example", "*.files.example:8443", "*.cdn.example"}
	if !reflect.DeepEqual(d.Meta.Run.Hosts, want) || d.Meta.Run.MaxTurns != 20 || d.Meta.Run.Timeout != "15m" ||
		d.Meta.Run.MaxCostUSD != 2.5 || d.Meta.Title != "Weekly invoices" {
		t.Fatalf("meta %+v run %+v", d.Meta, d.Meta.Run)
	}
	if !strings.Contains(string(d.Raw()), "  timeout: \"15m\"\n  max_cost_usd: 2.5\n# my comment\ncreated:") {
		t.Fatalf("file:\n%s", d.Raw())
	}
	// A bad host is refused; an unparsable file is never rewritten.
	if _, err := s.AllowHost("inv", "http://x.example/", ""); errs.Code(err) != errs.Usage {
		t.Fatalf("err = %v", err)
	}
	bad := []byte("---\ntitle: [\n---\n")
	os.WriteFile(p, bad, 0o644)
	if _, err := s.AllowHost("inv", "a.example", ""); err == nil {
		t.Fatal("broken file accepted")
	}
	if got, _ := os.ReadFile(p); string(got) != string(bad) {
		t.Fatal("broken file rewritten")
	}
}

func TestStageGates(t *testing.T) {
	run := &Run{}
	for _, c := range []struct {
		stage         string
		run           *Run
		headless, sch string // "" allowed, else a part of the error
	}{
		{"manual", nil, "only supervised and autonomous playbooks run headless", "only autonomous playbooks can be scheduled"},
		{"assisted", run, "only supervised and autonomous", "only autonomous"},
		{"supervised", nil, "", "only autonomous playbooks can be scheduled"},
		{"supervised", run, "", "only autonomous"},
		{"autonomous", nil, "has no run: block", "has no run: block"},
		{"autonomous", run, "", ""},
	} {
		m := Meta{Stage: c.stage, Run: c.run}
		for _, g := range []struct {
			name string
			err  error
			want string
		}{{"headless", CanRunHeadless("inv", m), c.headless}, {"schedule", CanSchedule("inv", m), c.sch}} {
			if g.want == "" && g.err != nil || g.want != "" && (g.err == nil || !strings.Contains(g.err.Error(), g.want)) {
				t.Errorf("%s run=%v %s: %v, want %q", c.stage, c.run != nil, g.name, g.err, g.want)
			}
			if g.err != nil && errs.AdviceOf(g.err).IsZero() {
				t.Errorf("%s %s: no advice", c.stage, g.name)
			}
		}
	}
	if a := errs.AdviceOf(CanRunHeadless("inv", Meta{Stage: "manual"})); a.Kind != ManualNotHeadless || a.Facts["next"] != "assisted" {
		t.Errorf("manual advice %v", a)
	}
	if a := errs.AdviceOf(CanSchedule("inv", Meta{Stage: "supervised"})); a.Kind != SupervisedNotScheduled || a.Facts["name"] != "inv" {
		t.Errorf("supervised advice %v", a)
	}
}

func rules(t *testing.T, ps ...string) []*policy.Rule {
	t.Helper()
	var out []*policy.Rule
	for _, p := range ps {
		r, err := policy.ParseRule(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func TestIntersectHosts(t *testing.T) {
	for _, c := range []struct {
		run    string
		policy []string
		want   []string
	}{
		{"api.example.com", []string{"api.example.com"}, []string{"api.example.com"}},
		{"api.example.com", []string{"other.example.com"}, nil},
		{"api.example.com", []string{"*.example.com"}, []string{"api.example.com"}},
		{"example.com", []string{"*.example.com"}, nil}, // a wildcard is strict subdomains
		{"*.example.com", []string{"api.example.com", "example.com", "x.other.org"}, []string{"api.example.com"}},
		{"*.example.com", []string{"*.example.com"}, []string{"*.example.com"}},
		{"*.example.com", []string{"*.eu.example.com"}, []string{"*.eu.example.com"}},
		{"*.eu.example.com", []string{"*.example.com"}, []string{"*.eu.example.com"}},
		{"*.eu.example.com", []string{"*.us.example.com"}, nil},
		{"api.example.com:8443", []string{"api.example.com"}, nil},
		{"api.example.com:443", []string{"api.example.com"}, []string{"api.example.com:443"}},
		{"api.example.com", []string{"api.example.com:443"}, []string{"api.example.com:443"}},
		{"api.example.com:80", []string{"api.example.com"}, nil},
		{"api.example.com:8443", []string{"*.example.com:8443"}, []string{"api.example.com:8443"}},
		{"10.1.2.3", []string{"10.1.2.3", "*.example.com"}, []string{"10.1.2.3"}},
		{"[2001:db8::1]:8443", []string{"[2001:db8::1]:8443"}, []string{"[2001:db8::1]:8443"}},
	} {
		got := IntersectHosts(rules(t, c.run)[0], rules(t, c.policy...))
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s ∩ %v = %v, want %v", c.run, c.policy, got, c.want)
		}
	}
}

func TestComputeAllowance(t *testing.T) {
	pol, err := policy.Parse("policy.yaml", []byte("services: [github]\ndomains: [\"*.bank.example\", api.mail.example]\ndeny: [evil.bank.example]\n"))
	if err != nil {
		t.Fatal(err)
	}
	m := Meta{Stage: "autonomous", Run: &Run{Hosts: []string{"api.github.com", "*.bank.example", "api.mail.example", "notallowed.example", "*.mail.example"},
		Secrets: []string{"BANK_TOKEN"}, Tools: []string{"Read"}, MaxTurns: 7}}
	s, err := ComputeAllowance("inv", "/p/inv.md", m, pol)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"api.github.com", "*.bank.example", "api.mail.example"}; !reflect.DeepEqual(s.Hosts, want) {
		t.Errorf("hosts = %v, want %v", s.Hosts, want)
	}
	if !reflect.DeepEqual(s.Deny, []string{"evil.bank.example"}) || s.MaxTurns != 7 || s.Timeout != DefaultTimeout || !s.Declared || s.Notice != "" {
		t.Errorf("spec %+v", s)
	}
	ex, _ := json.Marshal(s.Excluded)
	if !strings.Contains(string(ex), `{"host":"notallowed.example","reason":"the instance policy does not allow it","fix":"hobbs policy allow notallowed.example"}`) ||
		!strings.Contains(string(ex), `"host":"*.mail.example","reason":"the instance policy allows only api.mail.example of it"`) {
		t.Errorf("excluded %s", ex)
	}
	// What would let the run reach a host it was denied.
	for _, c := range []struct {
		host string
		port int
		want []string
	}{
		{"x.bank.example", 0, nil},
		{"www.github.com", 0, []string{"hobbs playbook allow inv www.github.com", "hobbs policy allow www.github.com"}},
		{"github.com", 0, []string{"hobbs playbook allow inv github.com"}},
		{"notallowed.example", 0, []string{"hobbs policy allow notallowed.example"}},
		{"api.mail.example", 8443, []string{"hobbs playbook allow inv api.mail.example:8443", "hobbs policy allow api.mail.example:8443"}},
	} {
		if got := s.AllowCommands(c.host, c.port); !reflect.DeepEqual(got, c.want) {
			t.Errorf("AllowCommands(%s, %d) = %q, want %q", c.host, c.port, got, c.want)
		}
	}
	// Supervised without run: the instance defaults, said so.
	s, err = ComputeAllowance("inv", "/p/inv.md", Meta{Stage: "supervised"}, pol)
	if err != nil || s.Declared || s.Hosts != nil || s.Secrets != nil || !strings.Contains(s.Notice, "instance defaults") || s.MaxTurns != DefaultMaxTurns {
		t.Fatalf("%+v %v", s, err)
	}
	if _, err := ComputeAllowance("inv", "/p/inv.md", Meta{Stage: "assisted"}, pol); err == nil {
		t.Fatal("assisted ran")
	}
}

// TestLockRunTwoProcesses holds the run lock in a child process and checks
// that a second run is refused while it lives and allowed once it is killed
// (the kernel releases an flock when its holder dies).
func TestLockRunTwoProcesses(t *testing.T) {
	if os.Getenv("HOBBS_TEST_HOLD_LOCK") != "" {
		unlock, err := LockRun(safefile.Beneath(os.Getenv("HOBBS_TEST_HOLD_LOCK")), ".locks/playbook-run-inv.lock", "inv")
		if err != nil {
			os.Exit(3)
		}
		defer unlock()
		os.WriteFile(filepath.Join(os.Getenv("HOBBS_TEST_HOLD_LOCK"), "held"), nil, 0o644)
		time.Sleep(time.Minute)
		return
	}
	dir := t.TempDir()
	root := safefile.Beneath(dir)
	child := exec.Command(os.Args[0], "-test.run=^TestLockRunTwoProcesses$")
	child.Env = append(os.Environ(), "HOBBS_TEST_HOLD_LOCK="+dir)
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dir, "held")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("child never took the lock")
		}
		time.Sleep(10 * time.Millisecond)
	}
	_, err := LockRun(root, ".locks/playbook-run-inv.lock", "inv")
	if err == nil || !strings.Contains(err.Error(), "inv is already running") || errs.Code(err) != errs.Failure {
		t.Fatalf("second run: %v", err)
	}
	// Another playbook is not blocked.
	unlock, err := LockRun(root, ".locks/playbook-run-other.lock", "other")
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	child.Process.Kill()
	child.Wait()
	unlock, err = LockRun(root, ".locks/playbook-run-inv.lock", "inv")
	if err != nil {
		t.Fatalf("after the holder died: %v", err)
	}
	unlock()
}
