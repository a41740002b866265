package task

import (
	"strings"
	"testing"
	"time"
)

func TestWriteSummary(t *testing.T) {
	started := time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)
	finished := started.Add(time.Hour)
	tk := &Task{ID: "task_20261122_001", Title: "Reconcile", Status: "running", Started: started, Body: "\n## Log\n"}
	var sb strings.Builder
	if err := tk.WriteSummary(&sb); err != nil {
		t.Fatal(err)
	}
	want := "id:       task_20261122_001\ntitle:    Reconcile\nstatus:   running\nagent:    -\nplaybook: -\n" +
		"started:  2026-11-22T09:30:00Z\n\n## Log\n"
	if sb.String() != want {
		t.Errorf("running:\n%s\nwant:\n%s", sb.String(), want)
	}
	tk.Agent, tk.Playbook, tk.Status, tk.Finished = "finance", "monthly", "ok", &finished
	tk.Remembered, tk.Review = []string{"mem_20261122_001", "mem_20261122_002"}, ReviewApproved
	sb.Reset()
	tk.WriteSummary(&sb)
	want = "id:       task_20261122_001\ntitle:    Reconcile\nstatus:   ok\nagent:    finance\nplaybook: monthly\n" +
		"started:  2026-11-22T09:30:00Z\nfinished: 2026-11-22T10:30:00Z\n" +
		"memories: mem_20261122_001, mem_20261122_002\nreview:   " + ReviewApproved + "\n\n## Log\n"
	if sb.String() != want {
		t.Errorf("finished:\n%s\nwant:\n%s", sb.String(), want)
	}
	// A headless run's figures from Claude Code's result.
	tk.Remembered, tk.Review, tk.Status = nil, "", Failed
	tk.ClaudeResult, tk.Turns, tk.CostUSD = "error_max_turns", 7, 0.0125
	sb.Reset()
	tk.WriteSummary(&sb)
	if !strings.Contains(sb.String(), "finished: 2026-11-22T10:30:00Z\nclaude:   error_max_turns, 7 turns, $0.0125\n\n## Log\n") {
		t.Errorf("a run's figures:\n%s", sb.String())
	}
}

func TestRow(t *testing.T) {
	started := time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)
	tk := &Task{ID: "task_20261122_001", Title: "Reconcile October", Status: Running, Started: started}
	stamp := started.Local().Format("2006-01-02 15:04")
	if got, want := tk.Row(), "task_20261122_001\trunning\t"+stamp+"\t-\tReconcile October"; got != want {
		t.Errorf("no agent: %q, want %q", got, want)
	}
	tk.Agent = "finance"
	if got, want := tk.Row(), "task_20261122_001\trunning\t"+stamp+"\tfinance\tReconcile October"; got != want {
		t.Errorf("agent: %q, want %q", got, want)
	}
	if strings.Count(ListColumns, "\t") != strings.Count(tk.Row(), "\t") {
		t.Errorf("header %q and row %q differ in columns", ListColumns, tk.Row())
	}
}
