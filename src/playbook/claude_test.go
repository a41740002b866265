package playbook

import (
	"slices"
	"strings"
	"testing"
)

// A run: block's run gets --tools (built-in names only: MCP tools are not
// --tools entries) and --allowedTools (the block's uses and the skill's
// own); a run without a block gets Claude Code's defaults.
func TestClaudeCommand(t *testing.T) {
	s := RunSpec{Playbook: "inbox", Declared: true, MaxTurns: 7, Tools: []string{"Read", "Bash(git *)", "mcp__mail__send", "Read"}}
	cmd := ClaudeCommand(s)
	if cmd[0] != "claude" || cmd[1] != "-p" || !strings.HasPrefix(cmd[2], "/run-playbook inbox\n") {
		t.Fatalf("not print mode with the playbook's prompt: %q", cmd)
	}
	at := func(flag string) int { return slices.Index(cmd, flag) }
	if i := at("--max-turns"); i < 0 || cmd[i+1] != "7" {
		t.Errorf("max turns: %q", cmd)
	}
	if i := at("--tools"); i < 0 || cmd[i+1] != "Read,Bash" {
		t.Errorf("--tools: %q", cmd)
	}
	i := at("--allowedTools")
	if i < 0 {
		t.Fatalf("no --allowedTools: %q", cmd)
	}
	allowed := cmd[i+1:]
	for _, want := range []string{"Bash(git *)", "mcp__mail__send", "Bash(hobbs playbook show *)", "Bash(hobbs memory search *)"} {
		if !slices.Contains(allowed, want) {
			t.Errorf("--allowedTools lacks %q: %q", want, allowed)
		}
	}
	def := ClaudeCommand(RunSpec{Playbook: "inbox", MaxTurns: DefaultMaxTurns})
	if slices.Contains(def, "--tools") || slices.Contains(def, "--allowedTools") {
		t.Errorf("a run without a run: block narrows the tools: %q", def)
	}
	if got := BuiltinTools([]string{"mcp__x", " WebFetch(domain:x) "}); !slices.Equal(got, []string{"WebFetch"}) {
		t.Errorf("BuiltinTools = %q", got)
	}
	if got := BuiltinTools(nil); got == nil || len(got) != 0 {
		t.Errorf("BuiltinTools(nil) = %#v, want an empty list (--tools \"\": no built-in tool)", got)
	}
}
