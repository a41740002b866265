package playbook

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// ClaudeCommand is a headless run's command: Claude Code in print mode told
// to carry out the playbook with the run-playbook skill, with the run's
// turn limit and, for a run: block, its tools.
func ClaudeCommand(s RunSpec) []string {
	prompt := fmt.Sprintf("/run-playbook %s\n\nCarry out the playbook %q with the run-playbook skill: "+
		"read it with `hobbs playbook show %s`, follow its steps, and end with the report the skill describes.",
		s.Playbook, s.Playbook, s.Playbook)
	cmd := []string{"claude", "-p", prompt}
	if s.MaxTurns > 0 {
		cmd = append(cmd, "--max-turns", strconv.Itoa(s.MaxTurns))
	}
	if s.Declared {
		// --tools is the set of built-in tools the run has at all;
		// --allowedTools approves the uses the block names ("Bash(git *)"
		// approves those commands only: in print mode nobody can approve
		// another, so it is refused).
		cmd = append(cmd, "--tools", strings.Join(BuiltinTools(s.AllowedTools()), ","), "--allowedTools")
		cmd = append(cmd, s.AllowedTools()...)
	}
	return cmd
}

// AllowedTools are the tool uses a run: block's run approves: the block's
// tools and what the run-playbook skill itself uses. Nil for a run without
// a block (Claude Code's defaults).
func (s RunSpec) AllowedTools() []string {
	if !s.Declared {
		return nil
	}
	return append(append([]string{}, s.Tools...), runPlaybookTools...)
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
	fmt.Fprintf(tw, "tools\t%s\n", list(s.Tools, "Claude Code's defaults"))
	fmt.Fprintf(tw, "max turns\t%d\n", s.MaxTurns)
	fmt.Fprintf(tw, "timeout\t%s\n", s.Timeout)
	tw.Flush()
}
