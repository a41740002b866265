package agentdoc

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func cmds(md string) []string {
	var out []string
	for _, c := range Commands([]byte(md)) {
		out = append(out, fmt.Sprintf("%d:%s", c.Line, c))
	}
	return out
}

func TestCommands(t *testing.T) {
	md := "# T\n" +
		"Run `hobbs memory context` first, then `hobbs memory add \"a | b\" --tag x`.\n" + // 2
		"Not a command: `hobbs-init.sh`, `echo hobbs`, `the hobbs toolkit`.\n" + // 3
		"Span across lines: `hobbs playbook\n" + // 4
		"list --due`.\n" + // 5
		"```sh\n" + // 6
		"$ hobbs playbook show x --json | jq .stage\n" + // 7
		"cat f | hobbs memory add - # a comment --nope\n" + // 8
		"HOBBS_HOME=/tmp/h hobbs init --no-input\n" + // 9
		"hobbs playbook new x --from - <<'EOF'\n" + // 10
		"hobbs this is heredoc text\n" + // 11
		"EOF\n" + // 12
		"hobbs task done t1 \\\n" + // 13
		"  --outcome ok 2>&1 >/dev/null\n" + // 14
		"x=$(hobbs agent context bookkeeper) && hobbs agent learn b 'it (works)'\n" + // 15
		"```\n" +
		"`` `hobbs` in double ticks ``\n" + // 17
		"A message, not a command: `hobbs proxy: CONNECT to x denied`.\n" // 18
	got := strings.Join(cmds(md), "\n")
	want := strings.Join([]string{
		"7:hobbs playbook show x --json",
		"8:hobbs memory add -",
		"9:hobbs init --no-input",
		"10:hobbs playbook new x --from -",
		"13:hobbs task done t1 --outcome ok",
		"15:hobbs agent context bookkeeper",
		"15:hobbs agent learn b it (works)",
		"2:hobbs memory context",
		"2:hobbs memory add a | b --tag x",
		"4:hobbs playbook list --due",
	}, "\n")
	if got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestHeadings(t *testing.T) {
	md := "# Hobbs\n\n## Who you are\n```\n## not a heading\n```\n### Deep ###\n#nospace\n"
	got := strings.Join(Headings([]byte(md)), "|")
	if got != "# Hobbs|## Who you are|### Deep" {
		t.Fatalf("got %q", got)
	}
}

func TestSkillValid(t *testing.T) {
	md := "---\nname: capture-playbook\ndescription: Capture a workflow.\nargument-hint: \"[workflow]\"\n" +
		"allowed-tools: Bash(hobbs playbook *), Read\n---\n\nCapture: $ARGUMENTS\n"
	s, probs := ParseSkill([]byte(md))
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	if p := ValidateSkill("capture-playbook", s); len(p) > 0 {
		t.Fatal(p)
	}
	if len(s.AllowedTools) != 2 || s.AllowedTools[0] != "Bash(hobbs playbook *)" {
		t.Fatalf("tools %q", s.AllowedTools)
	}
}

// Every key Claude Code documents for a skill is accepted.
func TestSkillDocumentedKeys(t *testing.T) {
	md := "---\nname: x\ndescription: d\nwhen_to_use: when asked\nargument-hint: \"[a]\"\narguments: [a]\n" +
		"disable-model-invocation: true\nuser-invocable: true\nallowed-tools: Read, Bash(git status *)\n" +
		"disallowed-tools: [Write]\nmodel: sonnet\neffort: high\ncontext: fork\nagent: Explore\n" +
		"background: false\nhooks: {}\npaths: [\"src/**\"]\nshell: bash\nmetadata: {team: x}\nlicense: MIT\n" +
		"compatibility: claude-code\n---\n\nDo $ARGUMENTS\n"
	s, probs := ParseSkill([]byte(md))
	if s != nil {
		probs = append(probs, ValidateSkill("x", s)...)
	}
	if len(probs) > 0 || len(s.Keys) != 20 || !s.DisableModelInvocation || len(s.DisallowedTools) != 1 {
		t.Fatalf("problems %v, %d keys, %+v", probs, len(s.Keys), s)
	}
}

// Every key Claude Code documents for a sub-agent is accepted, and hobbs:.
func TestAgentDocumentedKeys(t *testing.T) {
	md := "---\nname: finance\ndescription: Pays bills\ntools: Read, Grep\ndisallowedTools: [Write]\n" +
		"model: inherit\npermissionMode: default\nmaxTurns: 20\nskills: [remember]\nmcpServers: {}\nhooks: {}\n" +
		"memory: user\nbackground: false\nomitClaudeMd: false\neffort: medium\nisolation: worktree\n" +
		"color: blue\ninitialPrompt: Start.\nhobbs:\n  tags: [money]\n---\nYou are finance.\n"
	a, probs := ParseAgent([]byte(md))
	if a != nil {
		probs = append(probs, ValidateAgent("finance", a)...)
	}
	if len(probs) > 0 || len(a.Keys) != 18 || len(a.Tools) != 2 || a.DisallowedTools[0] != "Write" {
		t.Fatalf("problems %v, %+v", probs, a)
	}
}

func TestAgentInvalid(t *testing.T) {
	cases := []struct{ file, md, want string }{
		{"x", "---\nname: x\ndescription: d\ncolour: red\n---\nb\n", `4: unknown key "colour"`},
		{"x", "---\nname: x\ndescription: d\nmaxTurns: many\n---\nb\n", "whole number"},
		{"x", "---\nname: y\ndescription: d\n---\nb\n", "differs from its file name"},
		{"x", "---\nname: x\n---\nb\n", "description is required"},
		{"x", "---\nname: x\ndescription: d\ntools: Bash(git:*)\n---\nb\n", "deprecated :* suffix"},
		{"x", "---\nname: x\ndescription: d\n---\n\n", "body) is empty"},
	}
	for _, c := range cases {
		a, probs := ParseAgent([]byte(c.md))
		if a != nil {
			probs = append(probs, ValidateAgent(c.file, a)...)
		}
		var all []string
		for _, p := range probs {
			all = append(all, p.String())
		}
		if !strings.Contains(strings.Join(all, "\n"), c.want) {
			t.Errorf("%q: problems %q, want one containing %q", c.md, all, c.want)
		}
	}
}

// The framework sub-agents Hobbs ships are valid sub-agent files.
func TestFrameworkAgents(t *testing.T) {
	files, _ := filepath.Glob("../agents/*.md")
	if len(files) < 2 {
		t.Fatalf("found %d framework agents", len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		a, probs := ParseAgent(data)
		if a != nil {
			probs = append(probs, ValidateAgent(strings.TrimSuffix(filepath.Base(f), ".md"), a)...)
		}
		for _, p := range probs {
			t.Errorf("%s:%s", f, p)
		}
	}
}

func TestBashAllows(t *testing.T) {
	tools := []string{"Read", "Bash(hobbs memory *)", "Bash(git log:*)", "Bash(make test)"}
	for line, want := range map[string]bool{
		"hobbs memory search x": true,
		"hobbs memory":          false, // " *" needs something after the space
		"hobbs memoryx":         false,
		"hobbs playbook list":   false,
		"git log":               true,
		"git log -1":            true,
		"git logx":              false,
		"make test":             true,
		"make test2":            false,
	} {
		if got := BashAllows(tools, line); got != want {
			t.Errorf("%q: %v, want %v", line, got, want)
		}
	}
	if !BashAllows([]string{"Bash"}, "anything") || BashAllows([]string{"Read(x)"}, "x") {
		t.Error("bare Bash or a non-Bash rule")
	}
}

func TestSkillInvalid(t *testing.T) {
	cases := []struct{ dir, md, want string }{
		{"x", "# no frontmatter\n", "no frontmatter"},
		{"x", "---\nname: x\n", "not closed"},
		{"x", "---\nname: [x\n---\nbody\n", "frontmatter:"},
		{"x", "---\nname: x\ndescription: d\ncolour: red\n---\nbody\n", `4: unknown key "colour"`},
		{"x", "---\nname: x\ndescription: d\ndisable-model-invocation: maybe\n---\nbody\n", "true or false"},
		{"x", "---\nname: x\ndescription: [d]\n---\nbody\n", "description must be a string"},
		{"Bad_Name", "---\nname: Bad_Name\ndescription: d\n---\nbody\n", "not kebab-case"},
		{"x", "---\nname: y\ndescription: d\n---\nbody\n", `differs from its directory`},
		{"x", "---\nname: x\n---\nbody\n", "description is required"},
		{"x", "---\nname: x\ndescription: " + strings.Repeat("d", 1025) + "\n---\nbody\n", "at most 1024"},
		{"x", "---\nname: x\ndescription: use <b>me</b>\n---\nbody\n", "XML"},
		{"x", "---\nname: x\ndescription: d\nargument-hint: \"[a]\"\n---\nno args\n", "never uses $ARGUMENTS"},
		{"x", "---\nname: x\ndescription: d\n---\nuse $ARGUMENTS\n", "give an argument-hint"},
		{"x", "---\nname: x\ndescription: d\n---\nuse $0\n", "give an argument-hint"},
		{"x", "---\nname: x\ndescription: d\n---\n\n", "body is empty"},
		{"x", "---\nname: x\ndescription: d\nallowed-tools: Bash(git add:*, Read\n---\nb\n", "not a tool name"},
		{"x", "---\nname: x\ndescription: d\nallowed-tools: Bash(git add:*)\n---\nb\n", `write "Bash(git add *)"`},
		{"x", "---\nname: x\ndescription: d\ndisallowed-tools: 3\n---\nb\n", "string or a list"},
		{strings.Repeat("a", 65), "---\nname: " + strings.Repeat("a", 65) + "\ndescription: d\n---\nb\n", "at most 64"},
		{"claude-helper", "---\nname: claude-helper\ndescription: d\n---\nb\n", "reserved word"},
	}
	for _, c := range cases {
		s, probs := ParseSkill([]byte(c.md))
		if s != nil {
			probs = append(probs, ValidateSkill(c.dir, s)...)
		}
		var all []string
		for _, p := range probs {
			all = append(all, p.String())
		}
		if !strings.Contains(strings.Join(all, "\n"), c.want) {
			t.Errorf("%q: problems %q, want one containing %q", c.md, all, c.want)
		}
	}
}

func FuzzCommands(f *testing.F) {
	f.Add("`hobbs a b` and\n```\nhobbs x <<'E'\nE\n```\n")
	f.Add("```\nhobbs \"unterminated\n")
	f.Add("`hobbs 'x` y`")
	f.Fuzz(func(t *testing.T, md string) {
		for _, c := range Commands([]byte(md)) {
			if c.Line < 1 {
				t.Fatalf("line %d", c.Line)
			}
		}
		Headings([]byte(md))
		if s, _ := ParseSkill([]byte(md)); s != nil {
			ValidateSkill("x", s)
		}
	})
}

func TestTextCommands(t *testing.T) {
	for text, want := range map[string][]string{
		"run: hobbs vault init — or restore vault/keys/identity.txt":      {"hobbs vault init"},
		"build it once with `hobbs build --runtime` (needs the internet)": {"hobbs build --runtime"},
		"hobbs logs %s shows its output, hobbs ps what still runs":        {"hobbs logs VALUE shows its output", "hobbs ps what still runs"},
		"did you mean --%s? (see 'hobbs memory --help')":                  {"hobbs memory --help"},
		"pass --base IMAGE or set base_image in config.yaml":              nil,
		"run hobbs init --foundation in a terminal, or edit %s directly":  {"hobbs init --foundation in a terminal"},
		"(hobbs memory lint lists them)":                                  {"hobbs memory lint lists them"},
		"hobbs run --%s x":                                                {"hobbs run"},
		"then: hobbs playbook approve {name} --diff":                      {"hobbs playbook approve VALUE --diff"},
		"Hobbs never rewrites a file it cannot parse":                     nil,
	} {
		var got []string
		for _, c := range TextCommands(text) {
			got = append(got, c.String())
		}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("TextCommands(%q) = %q, want %q", text, got, want)
		}
	}
}

func TestHints(t *testing.T) {
	src := `package p
const offlineHint = "offline: see ` + "`hobbs build --runtime`" + `"
func f(e *E, a *A) {
	withHint(e, "run: hobbs vault init")
	withHint(e, "%s", offlineHint)
	withHint(e, fmt.Sprintf("hobbs stop %s", n) + ", then retry")
	a.hint("hobbs memory lint")
	_ = Result{Status: OK, Fix: "run: " + "hobbs doctor"}
	_ = &Error{Hint: offlineHint}
	withHint(e, msg)
	_ = map[Kind]words{K: say("see: hobbs playbook show {name}")}
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range Hints(fset, []*ast.File{f}) {
		got = append(got, h.Pos+" "+h.Text)
	}
	want := []string{"p.go:2 offline: see `hobbs build --runtime`", "p.go:4 run: hobbs vault init", "p.go:6 hobbs stop %s, then retry",
		"p.go:7 hobbs memory lint", "p.go:8 run: hobbs doctor", "p.go:9 offline: see `hobbs build --runtime`",
		"p.go:11 see: hobbs playbook show {name}"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Hints:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
