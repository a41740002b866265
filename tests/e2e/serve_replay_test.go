package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeReplayUnderAnotherID: GitHub signs the body, not the delivery
// id. A signed delivery captured and sent again under a new
// X-GitHub-Delivery, or with none, is the same event: it is refused (409)
// and runs nothing, before and after the first run has ended.
func TestServeReplayUnderAnotherID(t *testing.T) {
	s := newServeEnv(t, 2, "0s")
	body := issueBody("octo/repo", 7, "Crash on start", "It crashes.")
	r := s.deliver(t, "new-issues", body, "replay-1", hookSecret)
	if r.code != 202 || r.Status != "queued" {
		t.Fatalf("signed delivery: %d %+v\n%s", r.code, r, s.log())
	}
	if rr := s.deliver(t, "new-issues", body, "replay-2", hookSecret); rr.code != 409 {
		t.Errorf("the same body under a new id, while it runs: %d %+v", rr.code, rr)
	}
	s.waitNotice(t, s.taskOf(t, r.Job, 3*time.Minute), 3*time.Minute)
	for _, id := range []string{"replay-3", ""} {
		if rr := s.deliver(t, "new-issues", body, id, hookSecret); rr.code != 409 || rr.Job != "" {
			t.Errorf("the same body under id %q, after the run: %d %+v", id, rr.code, rr)
		}
	}
	if n := len(s.tasks(t)); n != 1 {
		t.Errorf("%d tasks, want the one run: %v", n, s.tasks(t))
	}
	// Another event of the same issue is taken: the record is of bodies,
	// not of issues.
	other := issueBody("octo/repo", 7, "Crash on start", "It crashes, also on Tuesdays.")
	if rr := s.deliver(t, "new-issues", other, "replay-4", hookSecret); rr.code != 202 || rr.Status != "queued" {
		t.Errorf("another event: %d %+v", rr.code, rr)
	} else {
		s.waitNotice(t, s.taskOf(t, rr.Job, 3*time.Minute), 3*time.Minute)
	}
	aud, _ := os.ReadFile(filepath.Join(s.inst, "logs", "audit.log"))
	if n := strings.Count(string(aud), `"reason":"replay: delivery seen in the last 24h"`); n != 3 {
		t.Errorf("%d replay refusals in the audit log, want 3", n)
	}
}
