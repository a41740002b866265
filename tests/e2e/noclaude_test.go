package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoClaudeCode: an image whose base has no Claude Code (as
// hobbs build --base-from-debian makes one offline) is one error
// everywhere, image.NoClaudeCode, with one next step: hobbs build says it,
// hobbs run, hobbs chat and hobbs playbook run end with it (exit 3) before
// an agent starts, and hobbs doctor (plain and --deep) report it. A
// command other than claude still runs on such an image; the run that
// builds it shows the build's start and end, not a line per step.
func TestNoClaudeCode(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.removeVolume(t)
	base, err := makeBaseWith(filepath.Join(tmpRoot, "netprobe"), false)
	if err != nil {
		t.Fatal(err)
	}
	img := "hobbs-e2e-" + runID + ":noclaude"
	t.Cleanup(func() { removeImages([]string{img}) })
	writeFile(t, filepath.Join(e.inst, "config.yaml"), fmt.Sprintf("image: %s\nbase_image: %s\nworkspace: %s\n", img, base, e.ws))

	const what, next = "has no Claude Code", "hobbs build --runtime"
	says := func(t *testing.T, cmd string, r result, code int) {
		t.Helper()
		out := r.stdout + r.stderr // doctor's report is its stdout
		t.Logf("%s: exit %d\n%s", cmd, r.code, out)
		if r.code != code || !strings.Contains(out, what) || !strings.Contains(out, next) {
			t.Errorf("%s: exit %d (want %d), and want %q and %q:\n%s", cmd, r.code, code, what, next, out)
		}
		for _, bad := range []string{"executable file not found", "no parseable result", "--approve", "ended before it was up", "could not look for claude"} {
			if strings.Contains(out, bad) {
				t.Errorf("%s says %q:\n%s", cmd, bad, out)
			}
		}
	}
	// The first run builds the image: its start and end lines, no line
	// per step (hobbs build's own output has them). Its command is not
	// claude, so it runs.
	r := e.hobbs(nil, "run", "--name", sessionName(t, "noclaude-sh"), "--", "sh", "-c", "echo other-command")
	if r.code != 0 || !strings.Contains(r.stdout, "other-command") {
		t.Fatalf("a command other than claude: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "building "+img) || !strings.Contains(r.stderr, "built "+img) || strings.Contains(r.stderr, "[1/") {
		t.Errorf("hobbs run's build, want its start and end lines only:\n%s", r.stderr)
	}
	says(t, "hobbs build", e.hobbs(nil, "build"), 0)
	says(t, "hobbs run", e.hobbs(nil, "run", "--name", sessionName(t, "noclaude")), 3)
	says(t, "hobbs chat", e.hobbs(nil, "chat", "--conversation", "c1", "hello"), 3)
	says(t, "hobbs doctor", e.hobbs(nil, "doctor"), 3)
	says(t, "hobbs doctor --deep", e.hobbs(nil, "doctor", "--deep"), 3)

	writeFile(t, filepath.Join(e.inst, "playbooks", "weekly.md"), `---
title: weekly
stage: supervised
tags: []
created: 2026-01-01
updated: 2026-01-01
last_reviewed: 2026-01-01
run:
  tools: ["Read"]
  max_turns: 3
  timeout: 1m
---
# weekly

## Steps
1. Read.
`)
	if r := e.hobbs(nil, "playbook", "approve", "weekly"); r.code != 0 {
		t.Fatalf("approve: %s", r.stderr)
	}
	says(t, "hobbs playbook run", e.hobbs(nil, "playbook", "run", "weekly"), 3)

	if left := e.leftovers(t); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}
