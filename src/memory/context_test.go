package memory

import (
	"encoding/json"
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
		first, rest, _ := strings.Cut(c.Text, "\n\n")
		if !strings.HasPrefix(first, "Hobbs context, read from the user's Hobbs instance") || !strings.Contains(first, "foundation.md") {
			t.Fatalf("budget %d: first line %q", budget, first)
		}
		if !strings.Contains(c.Text, foundation) || !strings.HasPrefix(rest, "## foundation.md\n\n") {
			t.Fatalf("budget %d: foundation.md not in full first", budget)
		}
		floor := c.Foundation.Needed
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

// hookText returns the additionalContext of hook JSON b, checking the event.
func hookText(t *testing.T, b []byte, event string) string {
	t.Helper()
	var h HookOutput
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatalf("hook JSON: %v: %.200s", err, b)
	}
	if h.HookSpecificOutput.HookEventName != event {
		t.Fatalf("hook event %q, want %q", h.HookSpecificOutput.HookEventName, event)
	}
	return h.HookSpecificOutput.AdditionalContext
}

// The hook's additionalContext — the string, not the JSON line around it —
// stays within Claude Code's limit, and fills it: escapes do not count.
func TestBuildHookFitsLimit(t *testing.T) {
	s := newStore(t)
	if err := os.WriteFile(s.In.Foundation(), []byte("# Me\n\nShort.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 400; i++ {
		// Many lines and quotes: JSON escaping makes the line longer than the text.
		body := strings.Repeat("\"q\"\n", 10)
		data := fmt.Sprintf("---\nid: mem_20250101_%03d\ncreated: 2025-01-01\n---\n\n%s\n", i, body)
		if err := os.WriteFile(filepath.Join(s.In.MemoryActive(), fmt.Sprintf("mem_20250101_%03d.md", i)), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, b, err := s.BuildHook(ContextOptions{Budget: HookLimit})
	if err != nil {
		t.Fatal(err)
	}
	text := hookText(t, b, SessionStart)
	if text != c.Text {
		t.Fatal("additionalContext differs from the context's text")
	}
	if n := hookLen(text); n > HookLimit || n < HookLimit-200 || len(c.Memories) == 0 {
		t.Fatalf("additionalContext is %d characters with %d memories; want at most %d, and close to it", n, len(c.Memories), HookLimit)
	}
	if n := utf8.RuneCount(b); n <= HookLimit {
		t.Fatalf("test corpus too easy: the JSON line (%d) is within the limit too, so measuring it would pass", n)
	}
	if _, b, err = s.BuildHook(ContextOptions{HookEvent: SubagentStart}); err != nil {
		t.Fatal(err)
	}
	hookText(t, b, SubagentStart)
	// A budget over the limit is capped at it.
	c, _, err = s.BuildHook(ContextOptions{Budget: 3 * HookLimit})
	if err != nil || hookLen(c.Text) > HookLimit {
		t.Fatalf("budget over the limit: %v, %d characters", err, hookLen(c.Text))
	}
}

// The hook text is not HTML-escaped: "<", ">" and "&" stay as they are.
func TestHookJSONNoHTMLEscapes(t *testing.T) {
	b, err := HookJSON("", "a <b> & c")
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"a <b> & c"}}`; string(b) != want {
		t.Fatalf("got %s\nwant %s", b, want)
	}
}

// writeFoundation writes a foundation.md of n characters (before the final
// newline) built from line, and returns its text.
func writeFoundation(t *testing.T, s *Store, n int, line string) string {
	t.Helper()
	text := "# Foundation\n"
	for runes(text)+runes(line) < n {
		text += line
	}
	text += strings.Repeat("x", n-runes(text))
	if err := os.WriteFile(s.In.Foundation(), []byte(text+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return text
}

func addMemories(t *testing.T, s *Store, n int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		if _, err := s.Add(fmt.Sprintf("Fact number %d about topic%d.", i, i), AddOptions{Tags: []string{"t"}}); err != nil {
			t.Fatal(err)
		}
	}
}

// A foundation.md too long for a hook (13,232 characters, as reported) never
// makes the hook's text go over the limit, which would make Claude Code
// replace it with a file path and a preview: the section names the file
// instead, the rest of the context follows, and a warning says so. Without
// the hook the foundation stays in full, with the same warning.
func TestLongFoundation(t *testing.T) {
	s := newStore(t)
	foundation := writeFoundation(t, s, 13232, "Always tell the truth, even when it costs something. ")
	if err := os.WriteFile(s.In.ClaudeMD(), []byte("Answer briefly.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addMemories(t, s, 5)
	secs, err := s.SessionSections("")
	if err != nil {
		t.Fatal(err)
	}
	c, b, err := s.BuildHook(ContextOptions{Sections: secs})
	if err != nil {
		t.Fatal(err)
	}
	text := hookText(t, b, SessionStart)
	if n := hookLen(text); n > HookLimit {
		t.Fatalf("additionalContext is %d characters, over %d", n, HookLimit)
	}
	if !strings.HasPrefix(text, "Hobbs context, read from the user's Hobbs instance") {
		t.Fatalf("first line: %.100q", text)
	}
	note := "## foundation.md\n\nNot included here: foundation.md is 13232 characters, more than the 10000 characters " +
		"Claude Code passes on from a hook. Its full text is in the file " + s.In.Foundation() + "."
	if !strings.Contains(text, note) || strings.Contains(text, "Always tell the truth") {
		t.Fatalf("the hook text does not point to the file instead of the text:\n%.600s", text)
	}
	if !strings.Contains(text, "## claude.md\n\nAnswer briefly.") || len(c.Memories) != 5 {
		t.Fatalf("claude.md or memories missing (%d memories):\n%s", len(c.Memories), text)
	}
	if c.Foundation == nil || !c.Foundation.ByPath || !c.Foundation.OverHook || c.Foundation.Chars != 13232 {
		t.Fatalf("foundation fit: %+v", c.Foundation)
	}
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "foundation.md is 13232 characters, more than the 10000") {
		t.Fatalf("warnings: %q", c.Warnings)
	}
	// The plain context keeps the foundation in full and warns the same way.
	plain, err := s.BuildContext(ContextOptions{Sections: secs})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plain.Text, foundation) || plain.Foundation.ByPath || len(plain.Warnings) != 1 {
		t.Fatalf("plain context: by path %v, warnings %q", plain.Foundation.ByPath, plain.Warnings)
	}
	// FoundationFit (hobbs doctor) tells the same.
	fit, err := s.FoundationFit(0)
	if err != nil || !fit.OverHook || !fit.OverBudget || fit.Warning() != c.Warnings[0] {
		t.Fatalf("FoundationFit: %+v %v", fit, err)
	}
}

// A foundation.md over the budget but within the hook limit is carried in
// full; there is no room left for the rest, and a warning says so.
func TestFoundationOverBudget(t *testing.T) {
	s := newStore(t)
	foundation := writeFoundation(t, s, 9700, "Be kind. ")
	addMemories(t, s, 3)
	c, b, err := s.BuildHook(ContextOptions{})
	if err != nil {
		t.Fatal(err)
	}
	text := hookText(t, b, SessionStart)
	if hookLen(text) > HookLimit || !strings.Contains(text, foundation) || len(c.Memories) != 0 {
		t.Fatalf("%d characters, foundation in full %v, %d memories", hookLen(text), strings.Contains(text, foundation), len(c.Memories))
	}
	if c.Foundation.ByPath || c.Foundation.OverHook || !c.Foundation.OverBudget {
		t.Fatalf("foundation fit: %+v", c.Foundation)
	}
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "leaves nothing of the context budget of 9500") {
		t.Fatalf("warnings: %q", c.Warnings)
	}
	// A short foundation gives no warning.
	writeFoundation(t, s, 2000, "Be kind. ")
	if c, err = s.BuildContext(ContextOptions{}); err != nil || len(c.Warnings) != 0 || len(c.Memories) != 3 {
		t.Fatalf("short foundation: %v %q %d", err, c.Warnings, len(c.Memories))
	}
	if fit, err := s.FoundationFit(0); err != nil || fit.Warning() != "" {
		t.Fatalf("short foundation fit: %+v %v", fit, err)
	}
}

// Claude Code counts UTF-16 code units: a foundation of characters outside
// the Basic Multilingual Plane is twice as long to it as in characters.
func TestFoundationCountsUTF16(t *testing.T) {
	s := newStore(t)
	writeFoundation(t, s, 6000, "🙂")
	c, b, err := s.BuildHook(ContextOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if text := hookText(t, b, SessionStart); hookLen(text) > HookLimit || !c.Foundation.ByPath {
		t.Fatalf("%d UTF-16 units, by path %v", hookLen(text), c.Foundation.ByPath)
	}
	if hookLen("a🙂") != 3 {
		t.Fatal("hookLen does not count a surrogate pair as two")
	}
}

// HTML comments in foundation.md and claude.md (the templates' guidance for
// the user) stay out of the context, and so do the blank lines they leave.
func TestContextLeavesOutComments(t *testing.T) {
	s := newStore(t)
	foundation := "# Foundation\n\n## Core Values\n\n<!-- List what matters to you. Example:\n- Honesty -->\n\n\n- Curiosity\n<!-- unclosed"
	if err := os.WriteFile(s.In.Foundation(), []byte(foundation), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.In.ClaudeMD(), []byte("<!-- your instructions -->\nAnswer in French.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	secs, err := s.SessionSections("")
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.BuildContext(ContextOptions{Sections: secs})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"<!--", "-->", "List what matters", "Honesty", "unclosed", "\n\n\n"} {
		if strings.Contains(c.Text, bad) {
			t.Errorf("context holds %q:\n%s", bad, c.Text)
		}
	}
	for _, want := range []string{"## Core Values\n\n- Curiosity", "Answer in French."} {
		if !strings.Contains(c.Text, want) {
			t.Errorf("context lacks %q:\n%s", want, c.Text)
		}
	}
}
