package playbook

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// A headless run's tools: what its Claude Code command line (package
// plan, which builds it) approves and denies, from the run: block.

// AllowedTools are the tool uses a run approves: the run: block's tools
// and what the run-playbook skill itself uses; a run without a block gets
// the skill's uses alone.
func (s Allowance) AllowedTools() []string {
	return append(append([]string{}, s.Tools...), runPlaybookTools...)
}

// DisallowedTools are the run's deny rules: every MCP tool ("mcp__*"),
// unless the run: block names MCP tools (a deny rule cannot carry
// exceptions, so then none; dontAsk still denies what the block does not
// approve).
func (s Allowance) DisallowedTools() []string {
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
func (s Allowance) WriteSummary(w io.Writer) {
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
