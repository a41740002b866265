package main

// The Markdown Hobbs ships for the model (src/agents, src/skills) must never
// drift from the CLI: every `hobbs …` command it quotes must name a real
// command with real flags, every SKILL.md must have valid frontmatter, and the
// identity must keep its required sections. These tests read the embedded
// assets — exactly what goes into the image.

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/hobbs-agent/hobbs"
	"github.com/hobbs-agent/hobbs/src/agentdoc"
)

// resolveCommand checks args (the words after "hobbs") against the command
// tree: each word before the first positional argument must be a subcommand
// where the current command has subcommands, and every flag must exist on the
// resolved command (local, inherited or help), with its value consumed when it
// takes one. Placeholders in usage syntax ("[--tag T]", "…") are tolerated.
func resolveCommand(root *cobra.Command, args []string) (*cobra.Command, error) {
	cmd := root
	walking := true // still reading subcommand names
	for i := 0; i < len(args); i++ {
		a := strings.Trim(strings.TrimSuffix(strings.TrimSuffix(args[i], "..."), "…"), "[]")
		if a == "" {
			continue // "…", "[", "]..."
		}
		if a == "--" {
			return cmd, checkGroup(cmd, walking, "")
		}
		if strings.HasPrefix(a, "-") && a != "-" {
			f, err := lookupFlag(cmd, a)
			if err != nil {
				return cmd, err
			}
			if f != nil && f.Value.Type() != "bool" && !strings.Contains(a, "=") && f.NoOptDefVal == "" {
				i++ // its value
			}
			continue
		}
		if walking {
			if sub := findSub(cmd, a); sub != nil {
				cmd = sub
				continue
			}
			if err := checkGroup(cmd, true, a); err != nil {
				return cmd, err
			}
			walking = false
		}
	}
	return cmd, checkGroup(cmd, walking, "")
}

// checkGroup fails when a positional word follows a command that only groups
// subcommands (it would be an unknown subcommand).
func checkGroup(cmd *cobra.Command, walking bool, word string) error {
	if word == "" || !walking || !isGroup(cmd) {
		return nil
	}
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	return fmt.Errorf("%q has no subcommand %q (it has: %s)", cmd.CommandPath(), word, strings.Join(names, ", "))
}

func findSub(cmd *cobra.Command, name string) *cobra.Command {
	for _, c := range cmd.Commands() {
		if c.Name() == name || c.HasAlias(name) {
			return c
		}
	}
	return nil
}

func lookupFlag(cmd *cobra.Command, a string) (*pflag.Flag, error) {
	cmd.InitDefaultHelpFlag()
	fs := cmd.Flags()
	fs.AddFlagSet(cmd.InheritedFlags())
	if strings.HasPrefix(a, "--") {
		name, _, _ := strings.Cut(a[2:], "=")
		if f := fs.Lookup(name); f != nil {
			return f, nil
		}
		return nil, fmt.Errorf("%q has no flag --%s", cmd.CommandPath(), name)
	}
	short := strings.TrimPrefix(a, "-")
	short, _, _ = strings.Cut(short, "=")
	var last *pflag.Flag
	for _, r := range short {
		f := fs.ShorthandLookup(string(r))
		if f == nil {
			return nil, fmt.Errorf("%q has no flag -%c", cmd.CommandPath(), r)
		}
		last = f
	}
	return last, nil
}

// quotedCommands returns every hobbs command quoted in the embedded agent
// Markdown, with its location.
func quotedCommands(t *testing.T) (map[string][]agentdoc.Command, int) {
	t.Helper()
	out := map[string][]agentdoc.Command{}
	n := 0
	for _, dir := range []string{"src/agents", "src/skills"} {
		err := fs.WalkDir(hobbs.Assets, dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || path.Ext(p) != ".md" {
				return err
			}
			data, err := fs.ReadFile(hobbs.Assets, p)
			if err != nil {
				return err
			}
			out[p] = agentdoc.Commands(data)
			n += len(out[p])
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out, n
}

func TestAgentMarkdownCommandsExist(t *testing.T) {
	root := newRoot(&app{})
	files, n := quotedCommands(t)
	if n < 30 {
		t.Fatalf("found only %d quoted hobbs commands; the extractor is broken", n)
	}
	var bad []string
	for p, cs := range files {
		for _, c := range cs {
			if _, err := resolveCommand(root, c.Args); err != nil {
				bad = append(bad, fmt.Sprintf("%s:%d: %s: %v", p, c.Line, c, err))
			}
		}
	}
	if len(bad) > 0 {
		t.Errorf("%d quoted command(s) do not match the CLI:\n%s", len(bad), strings.Join(sortedUnique(bad), "\n"))
	}
}

func sortedUnique(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	sort.Strings(out)
	return out
}

// The resolver itself must catch drift, or the test above proves nothing.
func TestResolveCommand(t *testing.T) {
	root := newRoot(&app{})
	ok := [][]string{
		{"playbook", "list", "--due", "--json"},
		{"playbook", "list", "--stage", "assisted"},
		{"playbook", "list", "--stage=assisted"},
		{"playbook", "new", "NAME", "[--title", "T]", "[--from", "FILE]"},
		{"playbook", "stage", "x", "assisted", "--reason", "why not"},
		{"--instance", "/tmp/h", "playbook", "show", "x"},
		{"playbook", "show", "x", "--instance=/tmp/h", "-h"},
		{"init", "--no-input"},
		{"playbook"},
		{},
	}
	for _, a := range ok {
		if _, err := resolveCommand(root, a); err != nil {
			t.Errorf("%q: %v", a, err)
		}
	}
	bad := map[string][]string{
		`has no subcommand "frobnicate"`:                {"frobnicate"},
		`"hobbs playbook" has no subcommand "delete"`:   {"playbook", "delete", "x"},
		`has no flag --force`:                           {"playbook", "new", "x", "--force"},
		`"hobbs playbook list" has no flag --due-soon`:  {"playbook", "list", "--due-soon"},
		`has no flag -z`:                                {"playbook", "list", "-z"},
		`"hobbs playbook" has no subcommand "add/list"`: {"playbook", "add/list"},
	}
	for want, a := range bad {
		_, err := resolveCommand(root, a)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want %q", a, err, want)
		}
	}
	// A value flag consumes its value: "list" here is the --stage value, not a
	// subcommand, and "--json" after it is still checked.
	if c, err := resolveCommand(root, []string{"playbook", "list", "--stage", "list", "--json"}); err != nil || c.Name() != "list" {
		t.Errorf("value consumption: %v %v", c, err)
	}
}

func TestSkillsFrontmatter(t *testing.T) {
	des, err := fs.ReadDir(hobbs.Assets, "src/skills")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"capture-playbook": false, "review-playbooks": false, "remember": false, "recall": false}
	for _, d := range des {
		if !d.IsDir() {
			t.Errorf("src/skills/%s: not a skill directory", d.Name())
			continue
		}
		p := "src/skills/" + d.Name() + "/SKILL.md"
		data, err := fs.ReadFile(hobbs.Assets, p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		s, probs := agentdoc.ParseSkill(data)
		if s != nil {
			probs = append(probs, agentdoc.ValidateSkill(d.Name(), s)...)
		}
		for _, pr := range probs {
			t.Errorf("%s:%s", p, pr)
		}
		if _, ok := want[d.Name()]; ok {
			want[d.Name()] = true
		}
	}
	for name, found := range want {
		if !found {
			t.Errorf("framework skill %s is missing", name)
		}
	}
}

func TestIdentitySections(t *testing.T) {
	data, err := fs.ReadFile(hobbs.Assets, "src/agents/hobbs/CLAUDE.md")
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, h := range agentdoc.Headings(data) {
		have[h] = true
	}
	for _, h := range []string{"# Hobbs", "## Who you are", "## The toolkit", "## Session start", "## Memory",
		"## Playbooks", "## Delegation", "## Data stores", "## Sensitive data", "## Personality", "## Key paths"} {
		if !have[h] {
			t.Errorf("src/agents/hobbs/CLAUDE.md lacks the heading %q", h)
		}
	}
	// Every slash command it names is a framework skill (a path such as
	// `/etc/claude-code/` is not a command).
	text := string(data)
	for _, m := range regexp.MustCompile("`/([a-z0-9-]+)[` ]").FindAllStringSubmatch(text, -1) {
		if _, err := fs.Stat(hobbs.Assets, "src/skills/"+m[1]+"/SKILL.md"); err != nil {
			t.Errorf("identity names /%s, which is not a framework skill", m[1])
		}
	}
	// The facts the sections exist for.
	for _, s := range []string{"`hobbs memory context`", "~/.hobbs/data/", "Never store secrets or vault data in memory",
		"`hobbs agent context bookkeeper`", "`hobbs memory supersede", "`hobbs memory reinforce",
		"Agent tool (sub-agent type", "the foundation is not included because it is too long",
		"replaced by the path of a saved file and a preview"} {
		if !strings.Contains(strings.Join(strings.Fields(text), " "), s) {
			t.Errorf("identity lacks %s", s)
		}
	}
	// Claude Code renamed the Task tool to Agent (2.1.63).
	if strings.Contains(text, "Task tool") {
		t.Error("identity names the Task tool; it is the Agent tool")
	}
}

// Every playbook command documents itself with examples (docs/cli.md).
func TestPlaybookHelpHasExamples(t *testing.T) {
	root := newRoot(&app{})
	pb := findSub(root, "playbook")
	if pb == nil {
		t.Fatal("no playbook command")
	}
	for _, c := range append([]*cobra.Command{pb}, pb.Commands()...) {
		if strings.TrimSpace(c.Example) == "" || c.Short == "" || c.Long == "" {
			t.Errorf("%s: missing Short, Long or Example", c.CommandPath())
		}
		if c != pb && !strings.Contains(c.Example, c.CommandPath()) {
			t.Errorf("%s: examples do not show the command", c.CommandPath())
		}
	}
}

// A skill that lists allowed-tools must allow every hobbs command it tells
// the model to run, or each run would stop for a permission prompt.
func TestSkillsAllowTheirCommands(t *testing.T) {
	des, err := fs.ReadDir(hobbs.Assets, "src/skills")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range des {
		p := "src/skills/" + d.Name() + "/SKILL.md"
		data, err := fs.ReadFile(hobbs.Assets, p)
		if err != nil {
			continue // reported by TestSkillsFrontmatter
		}
		s, _ := agentdoc.ParseSkill(data)
		if s == nil || len(s.AllowedTools) == 0 {
			continue
		}
		for _, c := range agentdoc.Commands(data) {
			if len(c.Args) == 0 {
				continue // "the `hobbs` toolkit": a name, not a command to run
			}
			if !agentdoc.BashAllows(s.AllowedTools, c.String()) {
				t.Errorf("%s:%d: %q is not covered by allowed-tools %q", p, c.Line, c.String(), s.AllowedTools)
			}
		}
	}
}

// Claude Code's allowed-tools lasts only the turn that invokes a skill
// (https://code.claude.com/docs/en/skills, "Pre-approve tools for a skill"):
// every hobbs command a framework skill runs is allowed for the whole
// session by the image's managed settings drop-in, which a headless run's
// plan covers (TestPlanInvariants).
func TestManagedSettingsAllowSkillCommands(t *testing.T) {
	data, err := fs.ReadFile(hobbs.Assets, "dist/managed-settings.d/50-framework-skills.json")
	if err != nil {
		t.Fatal(err)
	}
	var ms struct {
		Permissions struct {
			Allow []string `json:"allow"`
		} `json:"permissions"`
	}
	if err := json.Unmarshal(data, &ms); err != nil || len(ms.Permissions.Allow) == 0 {
		t.Fatalf("the drop-in has no permissions.allow: %v", err)
	}
	des, err := fs.ReadDir(hobbs.Assets, "src/skills")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range des {
		p := "src/skills/" + d.Name() + "/SKILL.md"
		md, err := fs.ReadFile(hobbs.Assets, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range agentdoc.Commands(md) {
			if len(c.Args) == 0 {
				continue
			}
			n++
			if !agentdoc.BashAllows(ms.Permissions.Allow, c.String()) {
				t.Errorf("%s:%d: %q is not allowed by the managed settings %q", p, c.Line, c.String(), ms.Permissions.Allow)
			}
		}
	}
	if n == 0 {
		t.Fatal("no hobbs command found in the framework skills")
	}
}

// The example in /capture-playbook is what the model imitates: run it for
// real and check it creates a playbook that passes lint.
func TestCapturePlaybookExampleWorks(t *testing.T) {
	data, err := fs.ReadFile(hobbs.Assets, "src/skills/capture-playbook/SKILL.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	i := strings.Index(text, "```sh\nhobbs playbook new ")
	if i < 0 {
		t.Fatal("no playbook new example")
	}
	block := text[i+len("```sh\n"):]
	block = block[:strings.Index(block, "\n```")]
	first, body, _ := strings.Cut(block, "\n")
	cmdLine, delim, ok := strings.Cut(first, " <<'")
	if !ok {
		t.Fatalf("example does not use a here-document: %q", first)
	}
	delim = strings.TrimSuffix(delim, "'")
	body, ok = strings.CutSuffix(body, "\n"+delim)
	if !ok {
		t.Fatalf("here-document not closed by %s", delim)
	}
	cmds := agentdoc.Commands([]byte("```\n" + cmdLine + "\n```\n"))
	if len(cmds) != 1 {
		t.Fatalf("cannot parse %q", cmdLine)
	}
	t.Setenv("HOBBS_HOME", t.TempDir())
	run := func(stdin string, args ...string) string {
		t.Helper()
		var out, errOut strings.Builder
		if code := Main(args, strings.NewReader(stdin), &out, &errOut); code != 0 {
			t.Fatalf("hobbs %s: exit %d\n%s", strings.Join(args, " "), code, errOut.String())
		}
		return out.String()
	}
	run("", "init", "--no-input")
	run(body+"\n", cmds[0].Args...)
	run("", "playbook", "lint")
	if out := run("", "playbook", "show", "weekly-invoices"); !strings.Contains(out, "3. Pay through the portal") {
		t.Fatalf("show:\n%s", out)
	}
}

// The user documentation is held to the same rule as the agent's: every
// hobbs command quoted in README.md and docs/*.md names a real command and
// real flags, so the docs cannot drift from the tool. So is every hint in
// the Go source (errors' hints, doctor's fixes): each hobbs command it
// names, in backquotes or not, is a real command with real flags.
func TestDocCommandsExist(t *testing.T) {
	t.Run("hints", testHintCommandsExist)
	files, _ := filepath.Glob("../../docs/*.md")
	files = append(files, "../../README.md")
	root := newRoot(&app{})
	total := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cs := agentdoc.Commands(data)
		total += len(cs)
		for _, c := range cs {
			if _, err := resolveCommand(root, c.Args); err != nil {
				t.Errorf("%s:%d: %s: %v", strings.TrimPrefix(f, "../../"), c.Line, c, err)
			}
		}
	}
	if total < 100 {
		t.Fatalf("only %d commands found in %d files", total, len(files))
	}
}

// testHintCommandsExist resolves the hobbs commands the hints of every
// package (cmd/hobbs and src/*) name (agentdoc.Hints, TextCommands).
func testHintCommandsExist(t *testing.T) {
	dirs, _ := filepath.Glob("../../src/*")
	root := newRoot(&app{})
	total := 0
	for _, dir := range append(dirs, ".") {
		fset := token.NewFileSet()
		pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, pkg := range pkgs {
			files := make([]*ast.File, 0, len(pkg.Files))
			for _, f := range pkg.Files {
				files = append(files, f)
			}
			for _, h := range agentdoc.Hints(fset, files) {
				for _, c := range agentdoc.TextCommands(h.Text) {
					total++
					if _, err := resolveCommand(root, c.Args); err != nil {
						t.Errorf("%s: hint %q: %s: %v", strings.TrimPrefix(h.Pos, "../../"), h.Text, c, err)
					}
				}
			}
		}
	}
	if total < 80 {
		t.Fatalf("only %d commands found in hints", total)
	}
}

// The README says, before anything else, what each install route needs
// from the network and where to go without it: a paragraph "Offline? …"
// naming each route's hosts, whose quoted sections are headings of
// docs/setup.md.
func TestReadmeSaysWhatInstallNeedsOffline(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	intro, _, _ := strings.Cut(string(readme), "\n## ")
	i := strings.Index(intro, "\nOffline? ")
	if i < 0 {
		t.Fatal("README.md has no paragraph \"Offline? …\" before its first section")
	}
	para, _, _ := strings.Cut(intro[i+1:], "\n\n")
	for _, route := range []string{"github.com", "ghcr.io", "`go install", "`make install`", "Go module proxy", "`hobbs build --runtime`",
		"registry.npmjs.org", "docs/setup.md"} {
		if !strings.Contains(para, route) {
			t.Errorf("the offline paragraph does not name %s:\n%s", route, para)
		}
	}
	setup, err := os.ReadFile("../../docs/setup.md")
	if err != nil {
		t.Fatal(err)
	}
	headings := map[string]bool{}
	for _, h := range agentdoc.Headings(setup) {
		headings[strings.TrimLeft(h, "# ")] = true
	}
	quoted := regexp.MustCompile(`"([^"]+)"`).FindAllStringSubmatch(para, -1)
	if len(quoted) < 2 {
		t.Errorf("the offline paragraph names no sections of docs/setup.md:\n%s", para)
	}
	for _, q := range quoted {
		if !headings[q[1]] {
			t.Errorf("docs/setup.md has no section %q", q[1])
		}
	}
}
