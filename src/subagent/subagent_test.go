package subagent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

var agentTpl, _ = os.ReadFile("../../templates/agent.md")
var opTpl, _ = os.ReadFile("../../templates/operational.md")

var framework = fstest.MapFS{
	"researcher.md":   {Data: []byte("---\nname: researcher\ndescription: Finds sources.\ntools: Read, WebFetch\nhobbs:\n  tags: [research]\n---\nYou research.\n")},
	"hobbs/CLAUDE.md": {Data: []byte("identity, not an agent")},
}

func newCatalog(t *testing.T) Catalog {
	in := instance.Instance{Root: t.TempDir()}
	return Catalog{Instance: in, Framework: framework}
}

func TestNewListGet(t *testing.T) {
	c := newCatalog(t)
	d, err := c.New(NewOptions{Name: "finance", Tags: []string{"money", "tax"}, Description: "Handles: bills & taxes",
		Template: agentTpl, Operational: opTpl})
	if err != nil {
		t.Fatal(err)
	}
	if d.Description != "Handles: bills & taxes" || strings.Join(d.Tags, ",") != "money,tax" {
		t.Fatalf("%+v", d)
	}
	if _, err := os.Stat(c.Instance.Operational("finance")); err != nil {
		t.Fatal("operational.md not created")
	}
	defs, probs := c.List()
	if len(probs) != 0 {
		t.Fatalf("problems: %v", probs)
	}
	var names []string
	for _, d := range defs {
		names = append(names, d.Name+":"+d.Source)
	}
	if got := strings.Join(names, " "); got != "hobbs:identity finance:custom researcher:framework" {
		t.Fatalf("list: %s", got)
	}
	if g, err := c.Get("researcher"); err != nil || g.Tags[0] != "research" || g.Tools != "Read, WebFetch" {
		t.Fatalf("get: %+v %v", g, err)
	}
}

func TestNewRefuses(t *testing.T) {
	c := newCatalog(t)
	base := NewOptions{Tags: []string{"x"}, Template: agentTpl, Operational: opTpl}
	for _, name := range []string{"researcher", "hobbs", "Bad", "../etc", "a--b", "", strings.Repeat("a", 65)} {
		o := base
		o.Name = name
		if _, err := c.New(o); errs.Code(err) != errs.Usage {
			t.Errorf("New(%q) = %v, want usage error", name, err)
		}
	}
	o := base
	o.Name, o.Tags = "ok", nil
	if _, err := c.New(o); err == nil {
		t.Error("no tags accepted")
	}
	o.Name, o.Tags = "ok", []string{"x"}
	if _, err := c.New(o); err != nil {
		t.Fatal(err)
	}
	if _, err := c.New(o); errs.Code(err) != errs.Usage || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("duplicate: %v", err)
	}
}

func TestBrokenCustomReportedNotRewritten(t *testing.T) {
	c := newCatalog(t)
	os.MkdirAll(c.Instance.AgentsCustom(), 0o755)
	bad := filepath.Join(c.Instance.AgentsCustom(), "broken.md")
	content := []byte("---\nname: broken\ndescription: [unclosed\n---\n")
	os.WriteFile(bad, content, 0o644)
	shadow := filepath.Join(c.Instance.AgentsCustom(), "researcher.md")
	os.WriteFile(shadow, []byte("---\nname: researcher\ndescription: mine\n---\n"), 0o644)
	defs, probs := c.List()
	if len(defs) != 2 || len(probs) != 2 {
		t.Fatalf("defs %d probs %v", len(defs), probs)
	}
	byPath := map[string]Problem{probs[0].Path: probs[0], probs[1].Path: probs[1]}
	if p, ok := byPath[bad]; !ok || p.Line == 0 || !regexp.MustCompile(`broken\.md:\d+: `).MatchString(p.String()) {
		t.Fatalf("no line for broken.md in %v", probs)
	}
	if p, ok := byPath[shadow]; !ok || !strings.Contains(p.String(), "researcher.md: \"researcher\" is a framework agent's name") {
		t.Fatalf("shadowing file not reported with its path: %v", probs)
	}
	if _, err := c.Get("broken"); err == nil || !strings.Contains(err.Error(), "cannot be read") {
		t.Fatalf("get broken: %v", err)
	}
	if b, _ := os.ReadFile(bad); string(b) != string(content) {
		t.Fatal("broken file rewritten")
	}
}

func TestLearnDedupes(t *testing.T) {
	in := instance.Instance{Root: t.TempDir()}
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	r, err := Learn(in, "researcher", "Prefer primary sources.", now, opTpl)
	if err != nil || !r.Added {
		t.Fatalf("%+v %v", r, err)
	}
	r, err = Learn(in, "researcher", "  prefer PRIMARY sources ", now.Add(48*time.Hour), opTpl)
	if err != nil || r.Added || r.Duplicate != "- 2026-11-22: Prefer primary sources." {
		t.Fatalf("dup: %+v %v", r, err)
	}
	if _, err := Learn(in, "researcher", "Check dates", now, opTpl); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(in.Operational("researcher"))
	if strings.Count(string(b), "\n- ") != 2 || !strings.Contains(string(b), "Operational learnings: researcher") {
		t.Fatalf("file:\n%s", b)
	}
}

func TestLearnConcurrent(t *testing.T) {
	in := instance.Instance{Root: t.TempDir()}
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			text := "lesson " + string(rune('a'+i%10))
			if _, err := Learn(in, "hobbs", text, time.Now(), opTpl); err != nil {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	b, _ := os.ReadFile(in.Operational("hobbs"))
	if n := strings.Count(string(b), "\n- "); n != 10 {
		t.Fatalf("%d learnings, want 10 distinct:\n%s", n, b)
	}
}

// A well-formed name that names no agent is a failure (exit 1), not bad usage.
func TestGetUnknownIsFailure(t *testing.T) {
	c := newCatalog(t)
	_, err := c.Get("nobody")
	if errs.Code(err) != errs.Failure || !strings.Contains(err.Error(), `no agent named "nobody"`) {
		t.Fatalf("Get(nobody) = %v (code %d)", err, errs.Code(err))
	}
	if _, err := c.Get("../x"); errs.Code(err) != errs.Usage {
		t.Fatalf("Get(../x) = %v, want a usage error", err)
	}
}

// An agents/custom that cannot be read is a problem; the framework agents remain.
func TestUnreadableCustomDirReported(t *testing.T) {
	c := newCatalog(t)
	if err := os.MkdirAll(filepath.Dir(c.Instance.AgentsCustom()), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.Instance.AgentsCustom(), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	defs, probs := c.List()
	if len(defs) < 2 || len(probs) != 1 || probs[0].Path != c.Instance.AgentsCustom() {
		t.Fatalf("defs %d problems %v", len(defs), probs)
	}
}

// Everything under agents/ is the agent's to write: a custom definition or
// operational.md planted as a link to a host file, or as a FIFO, is refused
// (reported, never followed, never blocking), and the link's target is left
// as it was.
func TestPlantedLinksAndFIFOsRefused(t *testing.T) {
	c := newCatalog(t)
	outside := filepath.Join(t.TempDir(), "host.md")
	const host = "---\nname: spy\ndescription: host file\nhobbs:\n  tags: [x]\n---\nsecret\n"
	if err := os.WriteFile(outside, []byte(host), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(c.Instance.AgentsCustom(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(c.Instance.AgentsCustom(), "spy.md")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(c.Instance.AgentsCustom(), "pipe.md"), 0o600); err != nil {
		t.Fatal(err)
	}
	defs, probs := c.List()
	for _, d := range defs {
		if d.Name == "spy" || d.Name == "pipe" {
			t.Fatalf("a planted file was read: %+v", d)
		}
	}
	if got := fmt.Sprint(probs); len(probs) != 2 || !strings.Contains(got, "is a symbolic link") || !strings.Contains(got, "is a FIFO") {
		t.Fatalf("problems: %v", probs)
	}

	// operational.md as a link: Learn refuses to read it, Operational too,
	// and the host file is unchanged.
	if err := os.MkdirAll(c.Instance.AgentDir("spy"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, c.Instance.Operational("spy")); err != nil {
		t.Fatal(err)
	}
	if _, err := Learn(c.Instance, "spy", "a lesson", time.Now(), opTpl); !errors.Is(err, safefile.ErrUnsafe) {
		t.Fatalf("learn through a link: %v", err)
	}
	if _, err := Operational(c.Instance, "spy"); !errors.Is(err, safefile.ErrUnsafe) {
		t.Fatalf("operational through a link: %v", err)
	}
	// agents/ itself a link to a directory elsewhere: nothing created there.
	elsewhere := t.TempDir()
	if err := os.Rename(c.Instance.Agents(), filepath.Join(elsewhere, "agents")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(elsewhere, "agents"), c.Instance.Agents()); err != nil {
		t.Fatal(err)
	}
	if _, err := Learn(c.Instance, "hobbs", "another", time.Now(), opTpl); !errors.Is(err, safefile.ErrUnsafe) {
		t.Fatalf("learn through a linked agents/: %v", err)
	}
	if _, err := c.New(NewOptions{Name: "fresh", Tags: []string{"x"}, Template: agentTpl, Operational: opTpl}); !errors.Is(err, safefile.ErrUnsafe) {
		t.Fatalf("new through a linked agents/: %v", err)
	}
	if b, _ := os.ReadFile(outside); string(b) != host {
		t.Fatalf("host file changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "agents", "custom", "fresh.md")); err == nil {
		t.Fatal("new wrote through the linked agents/")
	}
}

// Attack: a definition and an operational.md the agent made huge (sparse)
// are refused unread and named; the other agents are listed.
func TestOversizeAgentFilesRefused(t *testing.T) {
	c := newCatalog(t)
	if _, err := c.New(NewOptions{Name: "finance", Tags: []string{"money"}, Description: "Bills.", Template: agentTpl, Operational: opTpl}); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(c.Instance.AgentsCustom(), "huge.md")
	os.WriteFile(huge, []byte("---\nname: huge\ndescription: x\n---\n"), 0o644)
	os.Truncate(huge, instance.MaxAgentFile+1)
	defs, probs := c.List()
	if len(defs) != 3 || len(probs) != 1 || probs[0].Path != huge || !strings.HasPrefix(probs[0].Reason, "is larger than 1 MiB") {
		t.Fatalf("list: %d defs, problems %+v", len(defs), probs)
	}
	os.Truncate(c.Instance.Operational("finance"), instance.MaxAgentFile+1)
	if _, err := Operational(c.Instance, "finance"); !errors.Is(err, safefile.ErrTooLarge) {
		t.Errorf("operational: %v", err)
	}
	if _, err := Learn(c.Instance, "finance", "a lesson", time.Now(), opTpl); !errors.Is(err, safefile.ErrTooLarge) {
		t.Errorf("learn: %v", err)
	}
}
