package e2e

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/hobbs-agent/hobbs"
)

// The framework's place in the image: Claude Code's managed directory on
// Linux (docs/identity.md, "Where Claude Code finds Hobbs").
const (
	managedDir    = "/etc/claude-code"
	managedSkills = managedDir + "/.claude/skills"
	managedAgents = managedDir + "/.claude/agents"
	userScope     = "/home/dev/.claude" // CLAUDE_CONFIG_DIR in the image
)

// lockedEnv is Claude Code's locked-down environment the Hobbs layer sets.
var lockedEnv = []string{
	"CLAUDE_CONFIG_DIR=" + userScope,
	"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
	"DISABLE_UPDATES=1",
	"DISABLE_AUTOUPDATER=1",
	"CLAUDE_CODE_DISABLE_AUTO_MEMORY=1",
	"ENABLE_CLAUDEAI_MCP_SERVERS=false",
	"CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL=1",
}

// frameworkSkills and frameworkAgents are what the repository ships: every
// src/skills/<name>/SKILL.md and src/agents/<name>.md.
func frameworkSkills(t *testing.T) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(repoRoot, "src", "skills", "*", "SKILL.md"))
	var names []string
	for _, p := range m {
		names = append(names, filepath.Base(filepath.Dir(p)))
	}
	if len(names) < 4 {
		t.Fatalf("framework skills in the repository: %v", names)
	}
	return names
}

func frameworkAgents(t *testing.T) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(repoRoot, "src", "agents", "*.md"))
	var names []string
	for _, p := range m {
		names = append(names, strings.TrimSuffix(filepath.Base(p), ".md"))
	}
	if len(names) == 0 {
		t.Fatal("no framework agents in the repository")
	}
	return names
}

// imageFile is one entry of a directory copied out of the image.
type imageFile struct {
	uid, gid int
	mode     int64
	dir      bool
	data     []byte
}

// imageTree copies dir out of a container of the image (docker cp keeps
// owners and modes) and returns its entries by absolute path.
func imageTree(t *testing.T, dir string) (map[string]imageFile, error) {
	t.Helper()
	name := "e2e-" + runID + "-layout-" + strings.NewReplacer("/", "_", ".", "_").Replace(dir)
	docker(t, "create", "--name", name, "--label", "hobbs-e2e="+runID, image)
	defer exec.Command("docker", "rm", "-f", name).Run()
	out, err := exec.Command("docker", "cp", name+":"+dir, "-").Output()
	if err != nil {
		return nil, err
	}
	files := map[string]imageFile{}
	tr := tar.NewReader(bytes.NewReader(out))
	parent := filepath.Dir(dir)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("docker cp %s: %v", dir, err)
		}
		data, _ := io.ReadAll(tr)
		p := filepath.Join(parent, h.Name)
		files[p] = imageFile{uid: h.Uid, gid: h.Gid, mode: h.Mode & 0o7777, dir: h.Typeflag == tar.TypeDir, data: data}
	}
	return files, nil
}

// TestImageClaudeLayout: the identity, framework skills and sub-agents and
// the managed settings are where Claude Code reads managed files, equal to
// the repository's, root-owned and not writable by the agent; nothing is
// left at the old place under ~/hobbs; the image's environment is Claude
// Code's locked-down one; the state volume's template skips onboarding.
func TestImageClaudeLayout(t *testing.T) {
	if setupErr != nil {
		t.Fatalf("setup failed: %v", setupErr)
	}
	files, err := imageTree(t, managedDir)
	if err != nil {
		t.Fatalf("docker cp %s: %v", managedDir, err)
	}
	same := func(inImage, inRepo string) {
		t.Helper()
		f, ok := files[inImage]
		if !ok {
			t.Errorf("%s missing from the image", inImage)
			return
		}
		// The embedded copy (what hobbs build puts in the image), not the
		// working tree, which may have changed since the build.
		want, err := fs.ReadFile(hobbs.Assets, inRepo)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(f.data, want) {
			t.Errorf("%s in the image differs from the embedded %s", inImage, inRepo)
		}
	}
	same(managedDir+"/CLAUDE.md", "src/agents/hobbs/CLAUDE.md")
	same(managedDir+"/managed-settings.json", "dist/managed-settings.json")
	for _, s := range frameworkSkills(t) {
		same(managedSkills+"/"+s+"/SKILL.md", "src/skills/"+s+"/SKILL.md")
	}
	for _, a := range frameworkAgents(t) {
		same(managedAgents+"/"+a+".md", "src/agents/"+a+".md")
	}
	// Root-owned and writable by root only: the agent (never root) can
	// change nothing here.
	var paths []string
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		f := files[p]
		if f.uid != 0 || f.gid != 0 || f.mode&0o022 != 0 || f.mode&0o444 != 0o444 {
			t.Errorf("%s: owner %d:%d mode %04o, want root:root, readable by all, writable by root only", p, f.uid, f.gid, f.mode)
		}
	}
	// The old place is gone: an ancestor of the workspace must not carry a
	// second copy of the identity or skills.
	if _, err := imageTree(t, "/home/dev/hobbs/.claude"); err == nil {
		t.Errorf("/home/dev/hobbs/.claude still exists in the image")
	}

	same(managedDir+"/managed-settings.d/50-framework-skills.json", "dist/managed-settings.d/50-framework-skills.json")

	// Managed settings: the memory and sub-agent hooks, the locks that
	// hold against the agent, auto memory off, connectors off.
	var ms struct {
		AutoMemoryEnabled          *bool `json:"autoMemoryEnabled"`
		DisableClaudeAiConnectors  *bool `json:"disableClaudeAiConnectors"`
		AllowManagedHooksOnly      *bool `json:"allowManagedHooksOnly"`
		DisableSkillShellExecution *bool `json:"disableSkillShellExecution"`
		StrictKnownMarketplaces    []any `json:"strictKnownMarketplaces"`
		Permissions                struct {
			DisableBypassPermissionsMode string `json:"disableBypassPermissionsMode"`
			DisableAutoMode              string `json:"disableAutoMode"`
		} `json:"permissions"`
		Hooks map[string][]struct {
			Matcher string `json:"matcher"`
			Hooks   []struct {
				Type    string `json:"type"`
				Command string `json:"command"`
				Timeout int    `json:"timeout"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(files[managedDir+"/managed-settings.json"].data, &ms); err != nil {
		t.Fatalf("managed-settings.json: %v", err)
	}
	if ms.AutoMemoryEnabled == nil || *ms.AutoMemoryEnabled {
		t.Errorf("managed settings: autoMemoryEnabled is not false")
	}
	if ms.DisableClaudeAiConnectors == nil || !*ms.DisableClaudeAiConnectors {
		t.Errorf("managed settings: disableClaudeAiConnectors is not true")
	}
	if ms.AllowManagedHooksOnly == nil || !*ms.AllowManagedHooksOnly || ms.DisableSkillShellExecution == nil ||
		!*ms.DisableSkillShellExecution || ms.StrictKnownMarketplaces == nil || len(ms.StrictKnownMarketplaces) != 0 ||
		ms.Permissions.DisableBypassPermissionsMode != "disable" || ms.Permissions.DisableAutoMode != "disable" {
		t.Errorf("managed settings: the locks against the agent are not all set: %+v", ms)
	}
	if sa := ms.Hooks["SubagentStart"]; len(sa) != 1 || sa[0].Matcher != "" || len(sa[0].Hooks) != 1 ||
		sa[0].Hooks[0].Command != "hobbs agent context - --format hook" {
		t.Errorf("managed settings: no SubagentStart hook running `hobbs agent context - --format hook` for every sub-agent: %+v", sa)
	}
	// The context is loaded when a conversation starts empty or was
	// cleared or compacted; on resume (and fork) the conversation already
	// holds it, and a second copy would only take room.
	ss := ms.Hooks["SessionStart"]
	var matchers []string
	for _, g := range ss {
		if len(g.Hooks) != 1 || g.Hooks[0].Type != "command" || g.Hooks[0].Command != "hobbs memory context --format hook" || g.Hooks[0].Timeout <= 0 {
			t.Errorf("managed settings: SessionStart group %q does not run `hobbs memory context --format hook`: %+v", g.Matcher, g)
		}
		matchers = append(matchers, g.Matcher)
	}
	if strings.Join(matchers, ",") != "startup,clear,compact" {
		t.Errorf("managed settings: SessionStart matchers %q, want startup, clear and compact (not resume)", matchers)
	}

	// The image's environment.
	var env []string
	if err := json.Unmarshal([]byte(docker(t, "image", "inspect", "--format", "{{json .Config.Env}}", image)), &env); err != nil {
		t.Fatal(err)
	}
	for _, want := range lockedEnv {
		if !contains(env, want) {
			t.Errorf("image environment lacks %s: %v", want, env)
		}
	}

	// The state volume's template: onboarding done, a theme chosen (in the
	// state file and in the user's settings.json), the workspace trusted;
	// writable by whatever uid the session runs as.
	state, err := imageTree(t, userScope)
	if err != nil {
		t.Fatalf("docker cp %s: %v", userScope, err)
	}
	var st struct {
		HasCompletedOnboarding bool   `json:"hasCompletedOnboarding"`
		Theme                  string `json:"theme"`
		Projects               map[string]struct {
			HasTrustDialogAccepted bool `json:"hasTrustDialogAccepted"`
		} `json:"projects"`
	}
	if err := json.Unmarshal(state[userScope+"/.claude.json"].data, &st); err != nil {
		t.Fatalf(".claude.json: %v", err)
	}
	if !st.HasCompletedOnboarding || st.Theme == "" || !st.Projects["/home/dev/hobbs/workspace"].HasTrustDialogAccepted {
		t.Errorf(".claude.json does not skip onboarding: %+v", st)
	}
	var us struct {
		Theme string `json:"theme"`
	}
	if err := json.Unmarshal(state[userScope+"/settings.json"].data, &us); err != nil || us.Theme == "" {
		t.Errorf("settings.json has no theme: %v %s", err, state[userScope+"/settings.json"].data)
	}
	for _, p := range []string{userScope + "/.claude.json", userScope + "/settings.json"} {
		if state[p].mode&0o666 != 0o666 {
			t.Errorf("%s: mode %04o, want writable by any uid", p, state[p].mode)
		}
	}
}

// fakeLoad is what the fake claude says it would load, by kind: for
// "skill" and "agent" name → "SCOPE PATH", for "claude.md" path → scope.
type fakeLoad struct {
	skill, agent, shadowed, claudeMD map[string]string
	env                              []string
}

func parseFake(out string) fakeLoad {
	l := fakeLoad{skill: map[string]string{}, agent: map[string]string{}, shadowed: map[string]string{}, claudeMD: map[string]string{}}
	for _, line := range strings.Split(out, "\n") {
		rest, ok := strings.CutPrefix(line, "fake-claude: ")
		if !ok {
			continue
		}
		kind, rest, _ := strings.Cut(rest, " ")
		switch kind {
		case "skill", "agent":
			name, v, _ := strings.Cut(rest, " ")
			map[string]map[string]string{"skill": l.skill, "agent": l.agent}[kind][name] = v
		case "skill-shadowed", "agent-shadowed":
			name, v, _ := strings.Cut(rest, " ")
			l.shadowed[kind+" "+name] = v
		case "claude.md":
			scope, p, _ := strings.Cut(rest, " ")
			l.claudeMD[p] = scope
		case "env":
			l.env = append(l.env, rest)
		}
	}
	return l
}

// wsTree lists every path below dir with its mode, size and link target.
func wsTree(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		l := fmt.Sprintf("%s %v %d", strings.TrimPrefix(p, dir), fi.Mode(), fi.Size())
		if fi.Mode()&os.ModeSymlink != 0 {
			tg, _ := os.Readlink(p)
			l += " -> " + tg
		}
		lines = append(lines, l)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestFrameworkReachableFromGitWorkspace: a session whose workspace is a git
// repository still reaches the identity and every framework skill and
// sub-agent, and the instance's own skills and agents, by the discovery
// rules docs/identity.md states (checked with the fake claude, which
// implements them); started in a repository nested in the workspace, the
// outer project's skills are out of reach while the framework's are not.
// The session writes nothing into the workspace.
func TestFrameworkReachableFromGitWorkspace(t *testing.T) {
	e := newEnv(t)
	e.removeVolume(t)
	skills, agents := frameworkSkills(t), frameworkAgents(t)

	// The workspace: a repository with a project skill of its own and one
	// named like a framework skill; a repository nested in it.
	writeFile(t, filepath.Join(e.ws, ".git", "HEAD"), "ref: refs/heads/main\n")
	writeFile(t, filepath.Join(e.ws, ".claude", "skills", "e2e-project", "SKILL.md"), "---\nname: e2e-project\ndescription: p\n---\nb\n")
	writeFile(t, filepath.Join(e.ws, ".claude", "skills", skills[0], "SKILL.md"), "---\nname: "+skills[0]+"\ndescription: p\n---\nb\n")
	writeFile(t, filepath.Join(e.ws, "inner", ".git", "HEAD"), "ref: refs/heads/main\n")
	// The instance: a skill and an agent of its own, and a skill named
	// like a framework one (not linked: the framework's wins).
	writeFile(t, filepath.Join(e.inst, "skills", "e2e-inst", "SKILL.md"), "---\nname: e2e-inst\ndescription: i\n---\nb\n")
	writeFile(t, filepath.Join(e.inst, "skills", skills[1], "SKILL.md"), "---\nname: "+skills[1]+"\ndescription: i\n---\nb\n")
	writeFile(t, filepath.Join(e.inst, "agents", "custom", "e2e-inst-agent.md"), "---\nname: e2e-inst-agent\ndescription: i\n---\nb\n")
	before := wsTree(t, e.ws)

	check := func(r result, innerRepo bool) {
		t.Helper()
		if r.code != 0 {
			t.Fatalf("hobbs run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		l := parseFake(r.stdout)
		var loads []string
		for _, line := range strings.Split(r.stdout, "\n") {
			if strings.HasPrefix(line, "fake-claude: ") && !strings.HasPrefix(line, "fake-claude: env ") {
				loads = append(loads, line)
			}
		}
		t.Logf("the fake claude would load:\n%s", strings.Join(loads, "\n"))
		if l.claudeMD[managedDir+"/CLAUDE.md"] != "managed" {
			t.Errorf("the identity (%s/CLAUDE.md) is not loaded: %v", managedDir, l.claudeMD)
		}
		for _, s := range skills {
			if want := "managed " + managedSkills + "/" + s + "/SKILL.md"; l.skill[s] != want {
				t.Errorf("skill %s resolves to %q, want %q", s, l.skill[s], want)
			}
		}
		for _, a := range agents {
			if want := "managed " + managedAgents + "/" + a + ".md"; l.agent[a] != want {
				t.Errorf("agent %s resolves to %q, want %q", a, l.agent[a], want)
			}
		}
		if want := "user " + userScope + "/skills/e2e-inst/SKILL.md"; l.skill["e2e-inst"] != want {
			t.Errorf("instance skill resolves to %q, want %q", l.skill["e2e-inst"], want)
		}
		if want := "user " + userScope + "/agents/e2e-inst-agent.md"; l.agent["e2e-inst-agent"] != want {
			t.Errorf("instance agent resolves to %q, want %q", l.agent["e2e-inst-agent"], want)
		}
		if _, ok := l.shadowed["skill-shadowed "+skills[1]]; ok {
			t.Errorf("the instance's %s was linked beside the framework's", skills[1])
		}
		if innerRepo {
			// The project walk stops at the nested repository's root.
			if _, ok := l.skill["e2e-project"]; ok {
				t.Errorf("a project skill above the repository root was found from inner/: %s", l.skill["e2e-project"])
			}
		} else {
			if want := "project /home/dev/hobbs/workspace/.claude/skills/e2e-project/SKILL.md"; l.skill["e2e-project"] != want {
				t.Errorf("the workspace's own skill resolves to %q, want %q", l.skill["e2e-project"], want)
			}
			if want := "project /home/dev/hobbs/workspace/.claude/skills/" + skills[0] + "/SKILL.md"; l.shadowed["skill-shadowed "+skills[0]] != want {
				t.Errorf("the workspace's %s is not shadowed by the framework's: %q", skills[0], l.shadowed["skill-shadowed "+skills[0]])
			}
		}
		for _, want := range lockedEnv {
			if !contains(l.env, want) {
				t.Errorf("the agent's environment lacks %s", want)
			}
		}
		if want := "has the name of a framework skill (" + managedSkills + "/" + skills[1] + ")"; !strings.Contains(r.stderr, want) {
			t.Errorf("no collision warning for the instance's %s:\n%s", skills[1], r.stderr)
		}
		if after := wsTree(t, e.ws); after != before {
			t.Errorf("the session wrote into the workspace:\nbefore:\n%s\nafter:\n%s", before, after)
		}
	}
	check(e.hobbs(nil, e.runArgs(sessionName(t, "gitws"))...), false)
	check(e.hobbs(nil, e.runArgs(sessionName(t, "gitws-inner"), "sh", "-c", "cd inner && exec claude")...), true)
	if left := e.leftovers(t); len(left) > 0 {
		t.Errorf("left after the sessions: %v", left)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
