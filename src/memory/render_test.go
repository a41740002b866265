package memory

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/hobbs-agent/hobbs/src/errs"
)

func TestRenderContext(t *testing.T) {
	s := newStore(t)
	os.WriteFile(s.In.Foundation(), []byte("# Foundation\n\nBe kind.\n"), 0o644)
	if _, err := s.Add("The user prefers short answers <3 & plain text", AddOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx, text, err := s.RenderContext(ContextOptions{}, "text")
	if err != nil || string(text) != ctx.Text || !strings.Contains(ctx.Text, "short answers") || len(ctx.Memories) != 1 {
		t.Fatalf("text: %q %v", text, err)
	}
	_, hook, err := s.RenderContext(ContextOptions{}, "hook")
	var h struct {
		HookSpecificOutput struct {
			HookEventName     string `json:"hookEventName"`
			AdditionalContext string `json:"additionalContext"`
		} `json:"hookSpecificOutput"`
	}
	if err != nil || !strings.HasSuffix(string(hook), "}\n") || json.Unmarshal(hook, &h) != nil ||
		h.HookSpecificOutput.HookEventName != SessionStart || !strings.Contains(h.HookSpecificOutput.AdditionalContext, "Be kind.") {
		t.Fatalf("hook: %s %v", hook, err)
	}
	_, js, err := s.RenderContext(ContextOptions{}, "json")
	var c Context
	if err != nil || !strings.HasPrefix(string(js), "{\n  \"text\"") || !strings.Contains(string(js), "<3 & plain") ||
		json.Unmarshal(js, &c) != nil || len(c.Memories) != 1 {
		t.Fatalf("json: %s %v", js, err)
	}
	if _, _, err := s.RenderContext(ContextOptions{}, "yaml"); errs.Code(err) != errs.Usage {
		t.Fatalf("unknown format: %v", err)
	}
}

func TestCheckBudgetAndNotices(t *testing.T) {
	if _, err := CheckBudget(0, "text"); errs.Code(err) != errs.Usage {
		t.Errorf("zero budget: %v", err)
	}
	if warn, err := CheckBudget(HookLimit+1, "hook"); err != nil || !strings.Contains(warn, "over Claude Code's 10000-character hook limit") {
		t.Errorf("hook over the limit: %q %v", warn, err)
	}
	if warn, err := CheckBudget(HookLimit+1, "text"); err != nil || warn != "" {
		t.Errorf("text over the hook limit: %q %v", warn, err)
	}
	c := &Context{Budget: 50, Cut: []string{"claude.md"}, Warnings: []string{"foundation.md is long"}}
	if got := strings.Join(c.Notices(), "|"); got != "foundation.md is long|claude.md cut to fit the budget of 50 characters" {
		t.Errorf("notices %q", got)
	}
}

func TestRememberer(t *testing.T) {
	s := newStore(t)
	var told []string
	remember := s.Rememberer(func(res *AddResult, text string) { told = append(told, res.Action+" "+text) })
	id, err := remember("Export before 9am", []string{"task"}, "task:task_20261122_001")
	if err != nil {
		t.Fatal(err)
	}
	again, err := remember("Export before 9am", []string{"task"}, "task:task_20261122_002")
	if err != nil || again != id {
		t.Fatalf("the same lesson again: %s %v (want %s)", again, err, id)
	}
	m, err := s.Show(id)
	if err != nil || m.Type != "lesson" || m.Reinforced != 1 {
		t.Fatalf("%+v %v", m, err)
	}
	if strings.Join(told, "|") != "created Export before 9am|reinforced Export before 9am" {
		t.Errorf("told %q", told)
	}
	if _, err := remember("token ghp_"+strings.Repeat("a", 36), nil, ""); err == nil {
		t.Error("a secret was remembered")
	}
}

func TestSessionContext(t *testing.T) {
	s := newStore(t)
	os.WriteFile(s.In.ClaudeMD(), []byte("Be brief.\n"), 0o644)
	os.MkdirAll(s.In.AgentDir("researcher"), 0o755)
	os.WriteFile(s.In.Operational("researcher"), []byte("- Cite pages\n"), 0o644)
	opt, err := s.SessionContext("", []string{"x"}, 500)
	if err != nil || len(opt.Sections) != 1 || opt.Sections[0].Title != "claude.md" || len(opt.After) != 0 ||
		opt.Budget != 500 || opt.Tags[0] != "x" {
		t.Fatalf("session: %+v %v", opt, err)
	}
	opt, err = s.SessionContext("researcher", nil, 500)
	if err != nil || len(opt.Sections) != 0 || len(opt.After) != 1 || !strings.Contains(opt.After[0].Text, "Cite pages") {
		t.Fatalf("agent: %+v %v", opt, err)
	}
	if _, err := s.SessionContext("nobody", nil, 500); errs.Code(err) != errs.Failure {
		t.Fatalf("unknown agent: %v", err)
	}
}
