package subagent

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/memory"
)

var templates = fstest.MapFS{"agent.md": {Data: agentTpl}, "operational.md": {Data: opTpl}}

// New and Learn record themselves; the templates come from the catalog.
func TestCatalogChangesAreAudited(t *testing.T) {
	c := newCatalog(t)
	c.Templates = templates
	logPath := filepath.Join(c.Instance.Root, "audit.log")
	c.Audit = &audit.Logger{Path: logPath}
	if _, err := c.New(NewOptions{Name: "finance", Tags: []string{"money"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.New(NewOptions{Name: "finance", Tags: []string{"money"}}); err == nil {
		t.Fatal("an existing agent was made again")
	}
	for range 2 {
		if _, err := c.Learn("finance", "CSV exports use ;", time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if op, _ := Operational(c.Instance, "finance"); !strings.Contains(op, "Operational learnings: finance") ||
		!strings.Contains(op, "CSV exports use ;") {
		t.Fatalf("operational.md from the catalog's template:\n%s", op)
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e audit.Entry
		json.Unmarshal([]byte(line), &e)
		got = append(got, e.Event+" "+e.Subject+" "+e.Outcome)
	}
	want := "agent.new finance ok|agent.new finance error|agent.learn finance ok|agent.learn finance duplicate"
	if strings.Join(got, "|") != want {
		t.Fatalf("events %q, want %s", got, want)
	}
}

func TestContextOptions(t *testing.T) {
	c := newCatalog(t)
	in := c.Instance
	os.WriteFile(in.ClaudeMD(), []byte("Be brief.\n"), 0o644)
	s := memory.Open(in, nil)
	hobbs, _ := c.Get(Hobbs)
	opt, warn, err := ContextOptions(s, hobbs, 4000)
	if err != nil || warn != "" || opt.HookEvent != memory.SessionStart || opt.Budget != 4000 || len(opt.Tags) != 0 ||
		len(opt.Sections) != 1 || opt.Sections[0].Title != "claude.md" {
		t.Fatalf("hobbs: %+v %q %v", opt, warn, err)
	}
	researcher, _ := c.Get("researcher")
	if _, err := Learn(in, "researcher", "Cite the page", time.Now(), opTpl); err != nil {
		t.Fatal(err)
	}
	opt, warn, err = ContextOptions(s, researcher, 100)
	if err != nil || warn != "" || opt.HookEvent != memory.SubagentStart || strings.Join(opt.Tags, ",") != "research" ||
		len(opt.Sections) != 0 || len(opt.After) != 1 || !strings.Contains(opt.After[0].Text, "Cite the page") {
		t.Fatalf("researcher: %+v %q %v", opt, warn, err)
	}
	untagged := &Definition{Name: "loner"}
	opt, warn, err = ContextOptions(s, untagged, 100)
	if err != nil || !strings.Contains(warn, "agent loner has no memory tags") || len(opt.Tags) != 1 || opt.Tags[0] != noMemoryTag {
		t.Fatalf("untagged: %+v %q %v", opt, warn, err)
	}
}

func TestLinkIntoSession(t *testing.T) {
	c := newCatalog(t)
	dir := t.TempDir()
	t.Setenv("CLAUDE_CONFIG_DIR", dir)
	t.Setenv("HOBBS_CONTEXT", "")
	if got := LinkIntoSession(c, "finance"); !strings.Contains(got, "from the next session") {
		t.Errorf("on the host: %s", got)
	}
	t.Setenv("HOBBS_CONTEXT", "container")
	if got := LinkIntoSession(c, "finance"); !strings.Contains(got, "did not exist at session start") {
		t.Errorf("no agents directory: %s", got)
	}
	os.Mkdir(filepath.Join(dir, "agents"), 0o755)
	if got := LinkIntoSession(c, "finance"); !strings.HasPrefix(got, "linked as ") {
		t.Errorf("linked: %s", got)
	}
	if target, err := os.Readlink(filepath.Join(dir, "agents", "finance.md")); err != nil ||
		target != filepath.Join(c.Instance.AgentsCustom(), "finance.md") {
		t.Errorf("link %q %v", target, err)
	}
	if got := LinkIntoSession(c, "finance"); !strings.Contains(got, "not linked now") {
		t.Errorf("link exists: %s", got)
	}
}

func TestShow(t *testing.T) {
	c := newCatalog(t)
	if _, err := Learn(c.Instance, "researcher", "Cite the page", time.Now(), opTpl); err != nil {
		t.Fatal(err)
	}
	v, err := c.Show("researcher")
	if err != nil || v.Name != "researcher" || v.Prompt != "You research.\n" && v.Prompt != "You research." ||
		!strings.Contains(v.Operational, "Cite the page") {
		t.Fatalf("%+v %v", v, err)
	}
	b, _ := json.Marshal(v)
	if !strings.Contains(string(b), `"prompt":"You research.`) || !strings.Contains(string(b), `"operational":"`) {
		t.Errorf("json %s", b)
	}
	if _, err := c.Show("nobody"); err == nil {
		t.Error("an unknown agent was shown")
	}
}

func TestShownWriteSummary(t *testing.T) {
	d := &Definition{Name: "finance", Source: SourceCustom, Path: "/i/agents/custom/finance.md", Description: "Pays bills",
		Tags: []string{"money", "tax"}, Tools: "Read, Bash"}
	var sb strings.Builder
	if err := (Shown{Definition: d, Prompt: "You pay bills.", Operational: "# Learnings\n- Pay early\n"}).WriteSummary(&sb); err != nil {
		t.Fatal(err)
	}
	want := "name:        finance\nsource:      " + SourceCustom + "\nfile:        /i/agents/custom/finance.md\n" +
		"description: Pays bills\ntags:        money, tax\ntools:       Read, Bash\n\nYou pay bills.\n\n# Learnings\n- Pay early\n"
	if sb.String() != want {
		t.Errorf("custom:\n%s\nwant:\n%s", sb.String(), want)
	}
	sb.Reset()
	(Shown{Definition: &Definition{Name: "hobbs", Source: SourceIdentity, Tags: []string{}}}).WriteSummary(&sb)
	if want := "name:        hobbs\nsource:      " + SourceIdentity + "\ndescription: \ntags:        \n"; sb.String() != want {
		t.Errorf("bare:\n%q\nwant:\n%q", sb.String(), want)
	}
}

func TestDefinitionRow(t *testing.T) {
	d := &Definition{Name: "finance", Source: SourceCustom, Tags: []string{"money", "tax"}, Description: "Pays bills"}
	if got, want := d.Row(), "finance\t"+SourceCustom+"\tmoney,tax\tPays bills"; got != want {
		t.Errorf("tagged: %q, want %q", got, want)
	}
	if got, want := (&Definition{Name: "hobbs", Source: SourceIdentity, Tags: []string{}}).Row(), "hobbs\t"+SourceIdentity+"\t-\t"; got != want {
		t.Errorf("untagged: %q, want %q", got, want)
	}
	if strings.Count(ListColumns, "\t") != strings.Count(d.Row(), "\t") {
		t.Errorf("header %q and row %q differ in columns", ListColumns, d.Row())
	}
}

// A SubagentStart hook reads the agent's type from Claude Code's input: a
// Hobbs agent gets its own context; a built-in agent, an unknown name, a
// name that would be a path and "hobbs" itself get the foundation alone,
// as a SubagentStart hook's JSON.
func TestHookContextOptions(t *testing.T) {
	c := newCatalog(t)
	s := memory.Open(c.Instance, nil)
	in := `{"session_id":"abc","transcript_path":"/x.jsonl","cwd":"/w","hook_event_name":"SubagentStart","agent_id":"agent-1","agent_type":"researcher"}`
	name, err := HookAgentType(strings.NewReader(in))
	if err != nil || name != "researcher" {
		t.Fatalf("agent type %q %v", name, err)
	}
	opt := HookContextOptions(s, c, name, 1000)
	if opt.HookEvent != memory.SubagentStart || strings.Join(opt.Tags, ",") != "research" || opt.Budget != 1000 {
		t.Errorf("researcher: %+v", opt)
	}
	for _, other := range []string{"Explore", "general-purpose", "nobody", "../../vault/x", Hobbs, ""} {
		opt := HookContextOptions(s, c, other, 1000)
		if opt.HookEvent != memory.SubagentStart || len(opt.Tags) != 1 || opt.Tags[0] != noMemoryTag ||
			len(opt.Sections) != 0 || len(opt.After) != 0 {
			t.Errorf("%q: %+v, want the foundation alone", other, opt)
		}
	}
	for _, bad := range []string{"not json", `{"hook_event_name":"PreToolUse","agent_type":"x"}`, strings.Repeat(" ", maxHookInput+1)} {
		if _, err := HookAgentType(strings.NewReader(bad)); err == nil {
			t.Errorf("input %.40q accepted", bad)
		}
	}
}
