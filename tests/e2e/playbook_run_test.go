package e2e

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeRun is what the FAKE claude's print mode runs in a headless run
// (the workspace's .fake-claude-run): report its prompt, arguments and
// environment and the playbook's copy it was handed on stderr, make one request to the declared host with the
// bound secret's placeholder and one to a host the run did not declare,
// and end with a report (stdout, the result's text) whose Lessons become
// memories. A playbook named "hang" hangs instead.
const fakeRun = `case "$FAKE_PROMPT" in *"run-playbook hang") sleep 600;; esac
{
echo "prompt=$FAKE_PROMPT"
echo "args=$(echo "$FAKE_ARGS" | tr '\n' ' ')"
echo "allowed_key=${ALLOWED_KEY:-unset}"
echo "other_key=${OTHER_KEY:-unset}"
echo "declared=$(netprobe req GET http://$DECLARED/declared "X-Key: $ALLOWED_KEY")"
echo "undeclared=$(netprobe get http://$UNDECLARED/undeclared)"
f=$HOBBS_RUN_PLAYBOOK_FILE
echo "run_copy=$HOBBS_RUN_PLAYBOOK:$([ -r "$f" ] && echo readable)$( (echo x >> "$f") 2>/dev/null && echo ,writable)"
echo "shown=$(hobbs playbook show "$HOBBS_RUN_PLAYBOOK" 2>/dev/null | grep -c 'Fetch the export')"
} >&2
echo "@turns 4"
echo "@cost 0.0123"
echo "## Outcome"
echo "ok - e2e"
echo "## Lessons"
echo "- e2e-playbook-lesson: the bank exports on Mondays"
`

const pbValue = "pbrun-E2E-value-0123456789abcdef"

// TestPlaybookRun: hobbs playbook run on the real engine, with a FAKE
// claude. The run gets only what the playbook's run: block declares (its
// host, its secret, its tools and turn limit), is recorded as a task with
// its outcome, the host the proxy refused (with the command that allows
// it) and its final output, and its Lessons become memories. A run that
// hangs is stopped at its time limit: exit 124, nothing left behind.
func TestPlaybookRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.removeVolume(t)
	for name, v := range map[string]string{"allowed-key": pbValue, "other-key": "other-E2E-value-0123456789"} {
		if r := e.hobbs(nil, "vault", "init"); r.code != 0 && !strings.Contains(r.stderr, "exists") {
			t.Fatalf("vault init: %s", r.stderr)
		}
		if r := e.hobbs([]byte(v), "vault", "set", name); r.code != 0 {
			t.Fatalf("vault set: %s", r.stderr)
		}
	}
	gw := bridgeGateway(t)
	var mu sync.Mutex
	var got []string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.URL.Path+" key="+r.Header.Get("X-Key"))
		mu.Unlock()
		fmt.Fprint(w, "upstream-ok")
	}))
	srv.Listener = listen4(t)
	srv.Start()
	defer srv.Close()
	other := listen4(t) // allowed by the instance, not declared by the run
	defer other.Close()
	declared := fmt.Sprintf("%s:%d", gw, srv.Listener.Addr().(*net.TCPAddr).Port)
	undeclared := fmt.Sprintf("%s:%d", gw, other.Addr().(*net.TCPAddr).Port)

	writeFile(t, filepath.Join(e.inst, "policy.yaml"), fmt.Sprintf("domains: [%q, %q]\nallow_private: [%s/32]\n", declared, undeclared, gw))
	writeFile(t, filepath.Join(e.inst, "config.yaml"), fmt.Sprintf(
		"image: %s\nbase_image: %s\nworkspace: %s\nsecrets:\n  ALLOWED_KEY:\n    vault: allowed-key\n    hosts: [%q]\nenv:\n  OTHER_KEY: vault:other-key\n",
		image, baseImage, e.ws, declared))
	for _, pb := range []struct{ name, timeout, stage string }{{"weekly", "2m", "autonomous"}, {"hang", "5s", "autonomous"}, {"checked", "2m", "supervised"}} {
		writeFile(t, filepath.Join(e.inst, "playbooks", pb.name+".md"), fmt.Sprintf(`---
title: %s
stage: %s
tags: []
created: 2026-01-01
updated: 2026-01-01
last_reviewed: 2026-01-01
run:
  hosts: [%q]
  secrets: [ALLOWED_KEY]
  tools: ["Read", "Bash(hobbs *)"]
  max_turns: 7
  timeout: %s
---
# %s

## Steps
1. Fetch the export.
`, pb.name, pb.stage, declared, pb.timeout, pb.name))
	}
	writeFile(t, filepath.Join(e.ws, ".fake-claude-run"),
		"DECLARED="+declared+"\nUNDECLARED="+undeclared+"\n"+fakeRun)

	// Not approved yet: refused, nothing started.
	r := hobbsAs(nil, e.home, []string{"HOBBS_HOME=" + e.inst}, "playbook", "run", "weekly")
	if r.code != 2 || !strings.Contains(r.stderr, "has not been approved") {
		t.Fatalf("a run of an unapproved run: block: exit %d %s", r.code, r.stderr)
	}
	for _, pb := range []string{"weekly", "hang", "checked"} {
		if r := e.hobbs(nil, "playbook", "approve", pb); r.code != 0 {
			t.Fatalf("approve %s: %s", pb, r.stderr)
		}
	}
	r = hobbsAs(nil, e.home, []string{"HOBBS_HOME=" + e.inst}, "playbook", "run", "weekly")
	t.Logf("playbook run weekly: exit %d\n--- stdout\n%s--- stderr\n%s", r.code, r.stdout, r.stderr)
	if r.code != 0 {
		t.Fatalf("playbook run: exit %d", r.code)
	}
	p := kv(r.stderr)
	// The run carries out the approved text: a read-only copy, which
	// hobbs playbook show prints in the run.
	if p["run_copy"] != "weekly:readable" || p["shown"] != "1" {
		t.Errorf("the run's copy of the playbook: %q, shown %q", p["run_copy"], p["shown"])
	}
	// Claude Code was told to run the playbook, by its name alone, with the
	// limits, and the flags a headless run takes.
	if p["prompt"] != "/run-playbook weekly" {
		t.Errorf("claude's prompt %q, want /run-playbook weekly alone", p["prompt"])
	}
	for _, w := range []string{"--max-turns 7", "--permission-mode dontAsk", "--output-format json", "--setting-sources user",
		"--no-session-persistence", "--strict-mcp-config",
		"--tools Read,Bash --allowedTools Read Bash(hobbs *) Bash(hobbs playbook show *) Bash(hobbs memory search *) --disallowedTools mcp__*"} {
		if !strings.Contains(p["args"], w) {
			t.Errorf("claude's arguments %q lack %q", p["args"], w)
		}
	}
	// Claude Code's JSON result is the run's output.
	if !strings.HasPrefix(strings.TrimSpace(r.stdout), `{"type":"result","subtype":"success"`) {
		t.Errorf("the run's output is not Claude Code's JSON result: %s", r.stdout)
	}
	// Only the declared secret, as a placeholder.
	if p["allowed_key"] == "unset" || p["allowed_key"] == pbValue {
		t.Errorf("ALLOWED_KEY in the run: %q, want a placeholder", p["allowed_key"])
	}
	if p["other_key"] != "unset" {
		t.Errorf("OTHER_KEY reached the run, which does not declare it: %q", p["other_key"])
	}
	// The declared host got the value; the undeclared one was refused.
	if p["declared"] != "status=200 body=upstream-ok" {
		t.Errorf("declared host: %q", p["declared"])
	}
	if !strings.HasPrefix(p["undeclared"], "status=403") {
		t.Errorf("undeclared host: %q, want a 403", p["undeclared"])
	}
	mu.Lock()
	seen := strings.Join(got, "\n")
	mu.Unlock()
	if !strings.Contains(seen, "/declared key="+pbValue) {
		t.Errorf("the declared host did not get the secret's value: %q", seen)
	}

	// The task record: outcome, the refused host with its fix, the output.
	tl := e.hobbs(nil, "task", "list", "--json")
	if !strings.Contains(tl.stdout, `"playbook": "weekly"`) || !strings.Contains(tl.stdout, `"status": "ok"`) {
		t.Fatalf("task list has no ok task of playbook weekly:\n%s", tl.stdout)
	}
	id := between(tl.stdout, `"id": "`, `"`)
	show := e.hobbs(nil, "task", "show", id)
	for _, w := range []string{"Denied by the proxy", undeclared, "hobbs playbook allow weekly", "e2e-playbook-lesson", "max_turns 7",
		"claude:   success, 4 turns, $0.0123", "- outcome: ok"} {
		if !strings.Contains(show.stdout, w) {
			t.Errorf("task %s lacks %q:\n%s", id, w, show.stdout)
		}
	}
	if strings.Contains(show.stdout, pbValue) {
		t.Error("the task record holds the secret's value")
	}
	if m := e.hobbs(nil, "memory", "search", "e2e-playbook-lesson"); !strings.Contains(m.stdout, "bank exports on Mondays") {
		t.Errorf("the run's lesson is not a memory: %s %s", m.stdout, m.stderr)
	}

	// A supervised playbook's run, in the background: it waits for the
	// user's review, which playbook runs shows and task approve records.
	r = hobbsAs(nil, e.home, []string{"HOBBS_HOME=" + e.inst}, "playbook", "run", "checked", "--detach")
	if r.code != 0 || !strings.Contains(r.stderr, "running in the background") {
		t.Fatalf("playbook run --detach: exit %d %s", r.code, r.stderr)
	}
	var runs result
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		runs = e.hobbs(nil, "playbook", "runs", "checked")
		if strings.Contains(runs.stdout, "pending") {
			break
		}
		time.Sleep(time.Second)
	}
	if !strings.Contains(runs.stdout, " ok ") || !strings.Contains(runs.stdout, "pending") {
		t.Fatalf("the detached supervised run is not an ok run waiting for review:\n%s%s", runs.stdout, runs.stderr)
	}
	cid := strings.Fields(strings.Split(strings.TrimSpace(runs.stdout), "\n")[1])[0]
	if r := e.hobbs(nil, "task", "approve", cid, "--note", "checked by hand"); r.code != 0 {
		t.Fatalf("task approve: %s", r.stderr)
	}
	if runs = e.hobbs(nil, "playbook", "runs", "checked"); !strings.Contains(runs.stdout, "approved") {
		t.Errorf("the review is not shown: %s", runs.stdout)
	}

	// A run that hangs is stopped at its limit: exit 124, nothing left.
	start := time.Now()
	r = hobbsAs(nil, e.home, []string{"HOBBS_HOME=" + e.inst}, "playbook", "run", "hang")
	took := time.Since(start)
	t.Logf("playbook run hang: exit %d in %v\n--- stderr\n%s", r.code, took, r.stderr)
	if r.code != 124 || !strings.Contains(r.stderr, "time limit") {
		t.Errorf("a hanging run: exit %d, want 124 with the time limit named", r.code)
	}
	if took > 90*time.Second {
		t.Errorf("the hanging run took %v to stop (limit 5s)", took)
	}
	left := docker(t, "ps", "-a", "--filter", "label=dev.hobbs.instance="+instanceID(e.inst), "--format", "{{.Names}}")
	if strings.TrimSpace(left) != "" {
		t.Errorf("containers left behind by the stopped run: %s", left)
	}
	tl = e.hobbs(nil, "task", "list", "--json")
	if strings.Count(tl.stdout, `"status": "failed"`) != 1 {
		t.Errorf("the stopped run is not a failed task:\n%s", tl.stdout)
	}
	entries, _ := os.ReadDir(filepath.Join(e.inst, ".locks"))
	for _, en := range entries {
		if strings.HasPrefix(en.Name(), "playbook-run-") {
			if r := e.hobbs(nil, "playbook", "run", "weekly", "--dry-run"); r.code != 0 {
				t.Errorf("after the runs, a dry run fails: %s", r.stderr)
			}
		}
	}
}

// between is the text of s after the first a, up to the next b.
func between(s, a, b string) string {
	_, rest, ok := strings.Cut(s, a)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, b)
	return v
}
