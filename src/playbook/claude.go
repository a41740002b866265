package playbook

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// A headless run's Claude Code command line, by Claude Code's CLI
// reference (https://code.claude.com/docs/en/cli-reference) and its
// headless and permission-mode pages:
//
//	-p "/run-playbook NAME"     print mode; the skill reads the playbook by its
//	                            first argument ($0), nothing else in the prompt
//	--permission-mode dontAsk   a tool use no allow rule approves is denied, not
//	                            asked about (there is no one to ask)
//	--output-format json        one JSON result (subtype, is_error, result,
//	                            num_turns, total_cost_usd, session_id): the
//	                            run's outcome is read from it (RunResult)
//	--no-session-persistence    the conversation is not saved to disk
//	--setting-sources user      no project or local settings from the
//	                            workspace (hooks, permission rules); the user
//	                            scope is the run's own fresh directory
//	--strict-mcp-config         no MCP server from the workspace's .mcp.json
//	                            or the state: a run has none
//	--max-turns N, --max-budget-usd X   the run: block's limits
//	--tools, --allowedTools     the built-in tools the block names, and the
//	                            uses it approves (plus the skill's reads)
//	--disallowedTools mcp__*    every MCP tool removed, unless the block names one
const (
	PermissionMode = "dontAsk"
	OutputFormat   = "json"
	SettingSources = "user"
)

// ClaudeCommand is a headless run's command: Claude Code in print mode
// running the run-playbook skill on the playbook, with the flags above.
func ClaudeCommand(s RunSpec) []string {
	cmd := []string{"claude", "-p", "/run-playbook " + s.Playbook, "--permission-mode", PermissionMode,
		"--output-format", OutputFormat, "--no-session-persistence", "--setting-sources", SettingSources, "--strict-mcp-config"}
	if s.MaxTurns > 0 {
		cmd = append(cmd, "--max-turns", strconv.Itoa(s.MaxTurns))
	}
	if s.MaxCostUSD > 0 {
		cmd = append(cmd, "--max-budget-usd", FormatUSD(s.MaxCostUSD))
	}
	if s.Declared {
		// --tools is the set of built-in tools the run has at all.
		cmd = append(cmd, "--tools", strings.Join(BuiltinTools(s.AllowedTools()), ","))
	}
	// --allowedTools approves the uses listed ("Bash(git *)" approves those
	// commands only); under dontAsk any other use is denied, but for
	// Claude Code's read-only commands and file reads in the working
	// directory, which need no approval in any mode.
	cmd = append(cmd, "--allowedTools")
	cmd = append(cmd, s.AllowedTools()...)
	if d := s.DisallowedTools(); len(d) > 0 {
		cmd = append(cmd, "--disallowedTools")
		cmd = append(cmd, d...)
	}
	return cmd
}

// AllowedTools are the tool uses a run approves: the run: block's tools
// and what the run-playbook skill itself uses; a run without a block gets
// the skill's uses alone.
func (s RunSpec) AllowedTools() []string {
	return append(append([]string{}, s.Tools...), runPlaybookTools...)
}

// DisallowedTools are the run's deny rules: every MCP tool ("mcp__*"),
// unless the run: block names MCP tools (a deny rule cannot carry
// exceptions, so then none; dontAsk still denies what the block does not
// approve).
func (s RunSpec) DisallowedTools() []string {
	for _, t := range s.Tools {
		if strings.HasPrefix(t, "mcp__") {
			return []string{}
		}
	}
	return []string{"mcp__*"}
}

// runPlaybookTools are what the run-playbook skill itself uses, whatever
// the block declares: reading the playbook and the memories.
var runPlaybookTools = []string{"Bash(hobbs playbook show *)", "Bash(hobbs memory search *)"}

// BuiltinTools are the built-in tool names of run.tools entries ("Bash" of
// "Bash(git *)"), without MCP tools, which --tools does not take.
func BuiltinTools(tools []string) []string {
	out := []string{}
	seen := map[string]bool{}
	for _, t := range tools {
		name, _, _ := strings.Cut(t, "(")
		name = strings.TrimSpace(name)
		if name == "" || strings.HasPrefix(name, "mcp__") || seen[name] {
			continue
		}
		seen[name] = true
		out = append(out, name)
	}
	return out
}

// WriteSummary prints what a run is allowed, one field a line.
func (s RunSpec) WriteSummary(w io.Writer) {
	list := func(v []string, none string) string {
		if v == nil {
			return none
		}
		if len(v) == 0 {
			return "(none)"
		}
		return strings.Join(v, ", ")
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "playbook\t%s (%s)\n", s.Playbook, s.Stage)
	fmt.Fprintf(tw, "hosts\t%s\n", list(s.Hosts, "the instance policy"))
	fmt.Fprintf(tw, "deny\t%s\n", list(s.Deny, "(none)"))
	fmt.Fprintf(tw, "secrets\t%s\n", list(s.Secrets, "every secret config.yaml maps"))
	fmt.Fprintf(tw, "tools\t%s\n", list(s.Tools, "none approved (Claude Code's built-in tools, where they need no approval)"))
	fmt.Fprintf(tw, "max turns\t%d\n", s.MaxTurns)
	cost := "no cap"
	if s.MaxCostUSD > 0 {
		cost = "$" + FormatUSD(s.MaxCostUSD)
	}
	fmt.Fprintf(tw, "max cost\t%s\n", cost)
	fmt.Fprintf(tw, "timeout\t%s\n", s.Timeout)
	tw.Flush()
}
