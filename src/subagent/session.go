package subagent

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/memory"
)

// noMemoryTag matches no memory (tags cannot contain NUL): an agent without
// tags gets no memories rather than all of them.
const noMemoryTag = "\x00"

// ContextOptions is what hobbs agent context builds for d from the
// memories of s, within budget characters: for hobbs, claude.md before the
// memories and all of them (the session context); for another agent, the
// memories carrying its tags. Its operational learnings come after the
// memories, and BuildContext reserves room for both before ranking. warn
// says what the user should know: an agent without tags gets no memories.
func ContextOptions(s *memory.Store, d *Definition, budget int) (opt memory.ContextOptions, warn string, err error) {
	opt = memory.ContextOptions{Tags: d.Tags, Budget: budget, HookEvent: memory.SubagentStart}
	if d.Name == Hobbs {
		opt.HookEvent = memory.SessionStart
		sec, ok, err := s.FileSection("claude.md", s.In.ClaudeMD())
		if err != nil {
			return opt, "", err
		}
		if ok {
			opt.Sections = append(opt.Sections, sec)
		}
	} else if len(d.Tags) == 0 {
		warn = "agent " + d.Name + " has no memory tags: it gets no memories (add tags under hobbs: in its file)"
		opt.Tags = []string{noMemoryTag}
	}
	sec, ok, err := s.FileSection("agents/"+d.Name+"/operational.md", s.In.Operational(d.Name))
	if err != nil {
		return opt, "", err
	}
	if ok {
		opt.After = append(opt.After, sec)
	}
	return opt, warn, nil
}

// LinkIntoSession makes a custom agent made inside the container usable in
// the running session: the link hobbs-init.sh makes at start,
// $CLAUDE_CONFIG_DIR/agents/NAME.md to the instance file. Claude Code
// watches that directory (hobbs-init.sh creates it at start) and loads an
// agent file added to it without a restart. It returns what is true of the
// new agent's availability.
func LinkIntoSession(c Catalog, name string) string {
	next := "Claude Code loads agent " + name + " from the next session, when hobbs-init.sh links it"
	dir := os.Getenv("CLAUDE_CONFIG_DIR")
	if os.Getenv("HOBBS_CONTEXT") != "container" || dir == "" {
		return next
	}
	dest := filepath.Join(dir, "agents", name+".md")
	if st, err := os.Stat(filepath.Dir(dest)); err != nil || !st.IsDir() {
		return next + " (" + filepath.Dir(dest) + " did not exist at session start)"
	}
	if err := os.Symlink(filepath.Join(c.Instance.AgentsCustom(), name+".md"), dest); err != nil {
		return next + "; not linked now: " + err.Error()
	}
	return "linked as " + dest + ": this session's Claude Code finds agent " + name + " within seconds, without a restart"
}

// maxHookInput bounds what a SubagentStart hook reads of its input: Claude
// Code sends a small JSON object (session and agent ids, the agent type).
const maxHookInput = 64 << 10

// HookAgentType reads the JSON input Claude Code gives a SubagentStart hook
// on its standard input and returns its agent_type: the built-in agent's
// name (Explore, Plan, general-purpose) or a custom agent's frontmatter
// name (https://code.claude.com/docs/en/hooks, "SubagentStart input").
func HookAgentType(r io.Reader) (string, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxHookInput+1))
	if err != nil {
		return "", errs.Wrap(errs.Failure, err, "read the hook's input")
	}
	if len(data) > maxHookInput {
		return "", errs.Usagef("the hook's input is larger than %d bytes", maxHookInput)
	}
	var in struct {
		Event     string `json:"hook_event_name"`
		AgentType string `json:"agent_type"`
	}
	if err := json.Unmarshal(data, &in); err != nil {
		return "", errs.Usagef("the hook's input is not JSON: %v", err).
			Advise(HookInput)
	}
	if in.Event != "" && in.Event != memory.SubagentStart {
		return "", errs.Usagef("the hook's input is a %s event, not SubagentStart", in.Event)
	}
	return in.AgentType, nil
}

// HookContext is the context a SubagentStart hook gives the sub-agent
// whose hook input r holds (HookAgentType, HookContextOptions).
func HookContext(s *memory.Store, c Catalog, r io.Reader, budget int) (memory.ContextOptions, error) {
	name, err := HookAgentType(r)
	if err != nil {
		return memory.ContextOptions{}, err
	}
	return HookContextOptions(s, c, name, budget), nil
}

// HookContextOptions is the context a SubagentStart hook gives a sub-agent
// of Claude Code's agentType: a Hobbs agent's own (ContextOptions: its
// tagged memories and learnings); for a built-in agent, or any name Hobbs
// does not know or cannot read, the foundation alone (no tags, no
// learnings: a name from outside never names a file).
func HookContextOptions(s *memory.Store, c Catalog, agentType string, budget int) memory.ContextOptions {
	if agentType != Hobbs && ValidName(agentType) == nil {
		if d, err := c.Get(agentType); err == nil {
			if opt, _, err := ContextOptions(s, d, budget); err == nil {
				return opt
			}
		}
	}
	return memory.ContextOptions{Tags: []string{noMemoryTag}, Budget: budget, HookEvent: memory.SubagentStart}
}
