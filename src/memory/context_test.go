package memory

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// Whatever the budget, the context never exceeds it (unless foundation.md
// alone does), foundation.md is always there in full, sections keep their
// order, and memories come best first.
func TestBuildContextBudget(t *testing.T) {
	s := newStore(t)
	foundation := "# Me\n\nBe kind. Tell the truth. Ünïcödé counts as one character each."
	if err := os.WriteFile(s.In.Foundation(), []byte(foundation+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 60; i++ {
		body := strings.Repeat(fmt.Sprintf("word%d ", i), 1+i%9)
		data := fmt.Sprintf("---\nid: mem_20250101_%03d\ntags: [t%d]\ncreated: 2025-01-01\nreinforced: %d\nstatus: active\n---\n\n%s\n", i, i%3, i%7, body)
		if err := os.WriteFile(filepath.Join(s.In.MemoryActive(), fmt.Sprintf("mem_20250101_%03d.md", i)), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Once the files are out of the racy window the index is trusted, so
	// the budgets below do not each read and parse every file again.
	withIndexTimes(t, 30*time.Millisecond, time.Hour)
	settle()
	before := []Section{{Title: "claude.md", Text: strings.Repeat("Be brief. ", 20)}}
	after := []Section{{Title: "agents/x/operational.md", Text: strings.TrimSpace(strings.Repeat("Cite sources. ", 10))}}
	for budget := 60; budget < 4000; budget += 37 {
		c, err := s.BuildContext(ContextOptions{Budget: budget, Sections: before, After: after})
		if err != nil {
			t.Fatal(err)
		}
		n := utf8.RuneCountInString(c.Text)
		if n != c.Length {
			t.Fatalf("budget %d: Length %d, text has %d", budget, c.Length, n)
		}
		if !strings.Contains(c.Text, foundation) || !strings.HasPrefix(c.Text, "## foundation.md\n\n") {
			t.Fatalf("budget %d: foundation.md not in full first", budget)
		}
		floor := utf8.RuneCountInString(renderSection(Section{Title: "foundation.md", Text: foundation}))
		if n > budget && n > floor {
			t.Fatalf("budget %d: %d characters", budget, n)
		}
		if budget > 1500 && (len(c.Cut) > 0 || !strings.HasSuffix(c.Text, strings.TrimSpace(after[0].Text)+"\n")) {
			t.Fatalf("budget %d: sections cut %v or operational.md not last:\n%s", budget, c.Cut, c.Text)
		}
		for i := 1; i < len(c.Memories); i++ {
			if c.Memories[i].Score > c.Memories[i-1].Score {
				t.Fatalf("budget %d: memories not best first", budget)
			}
		}
		if len(c.Memories)+c.Omitted != 60 {
			t.Fatalf("budget %d: %d shown + %d omitted", budget, len(c.Memories), c.Omitted)
		}
	}
	c, err := s.BuildContext(ContextOptions{Budget: 100000, Tags: []string{"t1"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Memories) != 20 || c.Omitted != 0 {
		t.Fatalf("tag filter: %d memories, %d omitted", len(c.Memories), c.Omitted)
	}
}

// The hook JSON, escapes included, stays within Claude Code's limit.
func TestBuildHookFitsLimit(t *testing.T) {
	s := newStore(t)
	if err := os.WriteFile(s.In.Foundation(), []byte("# Me\n\nShort.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 400; i++ {
		// Many lines and quotes: JSON escaping makes the output longer than the text.
		body := strings.Repeat("\"q\"\n", 10)
		data := fmt.Sprintf("---\nid: mem_20250101_%03d\ncreated: 2025-01-01\n---\n\n%s\n", i, body)
		if err := os.WriteFile(filepath.Join(s.In.MemoryActive(), fmt.Sprintf("mem_20250101_%03d.md", i)), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, b, err := s.BuildHook(ContextOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := utf8.RuneCount(b); n > HookLimit || len(c.Memories) == 0 {
		t.Fatalf("hook JSON is %d characters with %d memories", n, len(c.Memories))
	}
	if !strings.Contains(string(b), `"hookEventName":"SessionStart"`) {
		t.Fatalf("default event is not SessionStart: %.80s", b)
	}
	if _, b, err = s.BuildHook(ContextOptions{HookEvent: SubagentStart}); err != nil || !strings.Contains(string(b), `"hookEventName":"SubagentStart"`) {
		t.Fatalf("SubagentStart hook: %.80s %v", b, err)
	}
	plain, err := s.BuildContext(ContextOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pb, _ := HookJSON("", plain.Text); utf8.RuneCount(pb) <= HookLimit {
		t.Fatalf("test corpus too easy: plain context already fits (%d)", utf8.RuneCount(pb))
	}
}
