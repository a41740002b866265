package playbook

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// PrepareRun gates the stage (a schedule's run: autonomous only), computes
// the grant, says whether the block is approved, and audits a refusal
// unless the caller only looks. RunLocked audits the run's end, and a
// second run refused by the lock.
func TestPrepareRunAndRunLocked(t *testing.T) {
	s, in := auditedStore(t)
	write := func(stage, extra string) {
		if err := os.WriteFile(filepath.Join(in.Playbooks(), "inv.md"), []byte(withFrontmatter(stage, extra)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(in.Playbooks(), 0o755); err != nil {
		t.Fatal(err)
	}
	write("manual", "")
	if _, err := s.PrepareRun("inv", nil, false, true); err == nil {
		t.Fatal("a manual playbook may run headless")
	}
	if ev, _ := events(t, in); slices.Contains(ev, "playbook.run inv refused") {
		t.Errorf("a dry run's refusal is audited: %v", ev)
	}
	if _, err := s.PrepareRun("inv", nil, false, false); err == nil {
		t.Fatal("a manual playbook may run headless")
	}
	if ev, _ := events(t, in); !slices.Contains(ev, "playbook.run inv refused") {
		t.Errorf("a refused run is not audited: %v", ev)
	}

	write("supervised", "run:\n  hosts: [api.example.com]\n")
	c, err := s.PrepareRun("inv", nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Spec.Declared || c.Run == nil || c.Unapproved == nil {
		t.Errorf("an unapproved run: block: %+v", c)
	}
	if _, err := s.PrepareRun("inv", nil, true, false); err == nil || !strings.Contains(err.Error(), "this scheduled run is refused") {
		t.Errorf("a schedule's run of a supervised playbook: %v", err)
	}
	if _, err := Approve(in, "inv", c.Doc, time.Now(), nil); err != nil {
		t.Fatal(err)
	}
	if c, err = s.PrepareRun("inv", nil, false, false); err != nil || c.Unapproved != nil {
		t.Fatalf("approved: %+v %v", c, err)
	}

	failed := errors.New("exit status 3")
	err = s.RunLocked("inv", "supervised", func() error {
		// A second run while the first holds the lock is refused.
		if err := s.RunLocked("inv", "supervised", func() error { t.Error("ran twice at once"); return nil }); err == nil {
			t.Error("a second run was not refused")
		}
		return failed
	})
	if err != failed {
		t.Errorf("RunLocked = %v, want the run's error", err)
	}
	_, es := events(t, in)
	var runs []string
	for _, e := range es {
		if e.Event == "playbook.run" {
			runs = append(runs, e.Outcome+" "+fmtDetail(e.Detail["reason"]))
		}
	}
	want := []string{"refused <nil>", "refused <nil>", "refused already running", "error <nil>"}
	if !slices.Equal(runs, want) {
		t.Errorf("playbook.run events %q, want %q", runs, want)
	}
}

func fmtDetail(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return "<nil>"
}
