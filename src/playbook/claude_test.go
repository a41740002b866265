package playbook

import (
	"slices"
	"strings"
	"testing"
)

// A run's command line follows Claude Code's CLI reference: print mode on
// "/run-playbook NAME" alone, dontAsk, a JSON result, no session saved, no
// workspace settings or MCP servers, the turn and cost limits; a run: block
// gets --tools (built-in names only: MCP tools are not --tools entries) and
// --allowedTools (its uses and the skill's own), and every MCP tool is
// denied unless the block names one. A run without a block keeps Claude
// Code's built-in tools and has only the skill's reads approved.
func TestClaudeCommand(t *testing.T) {
	s := RunSpec{Playbook: "inbox", Declared: true, MaxTurns: 7, MaxCostUSD: 1.25, Tools: []string{"Read", "Bash(git *)", "Read"}}
	cmd := ClaudeCommand(s)
	if cmd[0] != "claude" || cmd[1] != "-p" || cmd[2] != "/run-playbook inbox" {
		t.Fatalf("not print mode with /run-playbook NAME alone: %q", cmd)
	}
	at := func(cmd []string, flag string) int { return slices.Index(cmd, flag) }
	for flag, val := range map[string]string{"--max-turns": "7", "--max-budget-usd": "1.25", "--tools": "Read,Bash",
		"--permission-mode": "dontAsk", "--output-format": "json", "--setting-sources": "user", "--disallowedTools": "mcp__*"} {
		if i := at(cmd, flag); i < 0 || cmd[i+1] != val {
			t.Errorf("%s is not %q: %q", flag, val, cmd)
		}
	}
	for _, flag := range []string{"--no-session-persistence", "--strict-mcp-config"} {
		if at(cmd, flag) < 0 {
			t.Errorf("no %s: %q", flag, cmd)
		}
	}
	i, j := at(cmd, "--allowedTools"), at(cmd, "--disallowedTools")
	if i < 0 || j < i {
		t.Fatalf("no --allowedTools before --disallowedTools: %q", cmd)
	}
	allowed := cmd[i+1 : j]
	if want := []string{"Read", "Bash(git *)", "Read", "Bash(hobbs playbook show *)", "Bash(hobbs memory search *)"}; !slices.Equal(allowed, want) {
		t.Errorf("--allowedTools %q, want %q", allowed, want)
	}

	mcp := ClaudeCommand(RunSpec{Playbook: "inbox", Declared: true, MaxTurns: 7, Tools: []string{"mcp__mail__send"}})
	if at(mcp, "--disallowedTools") >= 0 || at(mcp, "--max-budget-usd") >= 0 || !slices.Contains(mcp, "mcp__mail__send") {
		t.Errorf("a block naming an MCP tool, without a cost cap: %q", mcp)
	}
	def := ClaudeCommand(RunSpec{Playbook: "inbox", MaxTurns: DefaultMaxTurns})
	if at(def, "--tools") >= 0 || !slices.Equal(def[at(def, "--allowedTools")+1:at(def, "--disallowedTools")], runPlaybookTools) {
		t.Errorf("a run without a run: block: %q", def)
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
