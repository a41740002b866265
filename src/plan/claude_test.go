package plan

import (
	"slices"
	"strings"
	"testing"

	"github.com/hobbs-agent/hobbs/src/playbook"
)

// A run's command line follows Claude Code's CLI reference: print mode on
// "/run-playbook NAME" alone, dontAsk, a JSON result, no session saved, no
// workspace settings or MCP servers, the turn and cost limits; a run: block
// gets --tools (built-in names only: MCP tools are not --tools entries) and
// --allowedTools (its uses and the skill's own), and every MCP tool is
// denied unless the block names one. A run without a block keeps Claude
// Code's built-in tools and has only the skill's reads approved. A
// triggered run's prompt is the trigger's; a chat turn's the fixed one.
func TestClaudeCommand(t *testing.T) {
	command := func(kind Kind, a playbook.Allowance, trig *Trigger) []string {
		t.Helper()
		p := &Plan{}
		p.claude(goldenConfig(t, ""), RunSpec{Kind: kind, Playbook: &a, Trigger: trig}, &a)
		return p.Claude.Command
	}
	s := playbook.Allowance{Playbook: "inbox", Declared: true, MaxTurns: 7, MaxCostUSD: 1.25, Tools: []string{"Read", "Bash(git *)", "Read"}}
	cmd := command(KindPlaybook, s, nil)
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
	if allowed := cmd[i+1 : j]; !slices.Equal(allowed, s.AllowedTools()) {
		t.Errorf("--allowedTools %q, want %q", allowed, s.AllowedTools())
	}

	mcp := command(KindPlaybook, playbook.Allowance{Playbook: "inbox", Declared: true, MaxTurns: 7, Tools: []string{"mcp__mail__send"}}, nil)
	if at(mcp, "--disallowedTools") >= 0 || at(mcp, "--max-budget-usd") >= 0 || !slices.Contains(mcp, "mcp__mail__send") {
		t.Errorf("a block naming an MCP tool, without a cost cap: %q", mcp)
	}
	def := playbook.Allowance{Playbook: "inbox", MaxTurns: playbook.DefaultMaxTurns}
	if c := command(KindPlaybook, def, nil); at(c, "--tools") >= 0 ||
		!slices.Equal(c[at(c, "--allowedTools")+1:at(c, "--disallowedTools")], def.AllowedTools()) {
		t.Errorf("a run without a run: block: %q", c)
	}
	trig := command(KindTrigger, s, &Trigger{Name: "new-issues", Source: "github"})
	if trig[2] != TriggerPrompt("inbox", "new-issues", "github") || !slices.Equal(trig[3:], cmd[3:]) {
		t.Errorf("a triggered run: %q", trig)
	}
	p := &Plan{}
	p.claude(goldenConfig(t, ""), RunSpec{Kind: KindChat, Chat: &ChatSpec{MaxTurns: 4}}, nil)
	if got := strings.Join(p.Claude.Command, " "); got != "claude -p "+ChatPrompt+" --permission-mode dontAsk --output-format json "+
		"--no-session-persistence --setting-sources user --strict-mcp-config --max-turns 4 --disallowedTools mcp__*" {
		t.Errorf("a chat turn: %s", got)
	}
}
