package playbook

import (
	"slices"
	"strings"
	"testing"
)

// A run's tools: its block's uses and the skill's own approved, every MCP
// tool denied unless the block names one; --tools takes built-in names
// only. (The command line they make: plan's TestClaudeCommand.)
func TestRunTools(t *testing.T) {
	s := Allowance{Playbook: "inbox", Declared: true, MaxTurns: 7, MaxCostUSD: 1.25, Tools: []string{"Read", "Bash(git *)", "Read"}}
	if want := []string{"Read", "Bash(git *)", "Read", "Bash(hobbs playbook show *)", "Bash(hobbs memory search *)"}; !slices.Equal(s.AllowedTools(), want) {
		t.Errorf("AllowedTools %q, want %q", s.AllowedTools(), want)
	}
	if d := s.DisallowedTools(); !slices.Equal(d, []string{"mcp__*"}) {
		t.Errorf("DisallowedTools %q", d)
	}
	mcp := Allowance{Playbook: "inbox", Declared: true, Tools: []string{"mcp__mail__send"}}
	if d := mcp.DisallowedTools(); d == nil || len(d) != 0 {
		t.Errorf("a block naming an MCP tool denies %q", d)
	}
	if def := (Allowance{Playbook: "inbox"}); !slices.Equal(def.AllowedTools(), runPlaybookTools) {
		t.Errorf("a run without a run: block approves %q", def.AllowedTools())
	}
	if got := BuiltinTools([]string{"mcp__x", " WebFetch(domain:x) "}); !slices.Equal(got, []string{"WebFetch"}) {
		t.Errorf("BuiltinTools = %q", got)
	}
	if got := BuiltinTools(nil); got == nil || len(got) != 0 {
		t.Errorf("BuiltinTools(nil) = %#v, want an empty list (--tools \"\": no built-in tool)", got)
	}
	var b strings.Builder
	s.WriteSummary(&b)
	if !strings.Contains(b.String(), "max cost   $1.25") {
		t.Errorf("summary:\n%s", b.String())
	}
}
