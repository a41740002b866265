// Package agentdoc reads the Markdown that Hobbs ships for the model — the
// identity (src/agents/hobbs/CLAUDE.md), the framework skills
// (src/skills/<name>/SKILL.md) and the framework sub-agents
// (src/agents/<name>.md) — so that tests can keep it honest:
//
//   - ParseSkill and ValidateSkill check a SKILL.md's frontmatter against
//     Claude Code's rules (name kebab-case ≤ 64 characters and equal to the
//     directory, description ≤ 1024, every key one Claude Code documents,
//     $ARGUMENTS or $N used exactly when an argument-hint is given).
//   - ParseAgent and ValidateAgent do the same for a sub-agent file.
//   - BashAllows says whether a skill's allowed-tools pre-approve a command.
//   - Commands extracts every `hobbs …` command line quoted in the text
//     (fenced blocks and inline code), split into shell words, so a test can
//     resolve each against the CLI's real command tree.
//   - Headings lists the headings, to check required sections.
//   - Hints finds the hints in Go source (what errors and doctor tell the
//     user to do next: the words of each kind of advice in cmd/hobbs, and
//     hints still written where they are given), and TextCommands the hobbs
//     commands a hint names, so that they are held to the same rule.
//
// The package knows Markdown and shell words, not the CLI: it never imports
// cobra. The resolution lives in cmd/hobbs's tests.
package agentdoc

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/hobbs-agent/hobbs/src/frontmatter"
)

// Skill is a parsed SKILL.md.
type Skill struct {
	Name                   string
	Description            string
	ArgumentHint           string
	AllowedTools           []string // pre-approved while the skill runs; other tools still ask
	DisallowedTools        []string
	DisableModelInvocation bool
	Keys                   []string // every frontmatter key, in order
	Body                   string
	BodyLine               int // 1-based line where the body starts
}

// Agent is a parsed sub-agent file.
type Agent struct {
	Name            string
	Description     string
	Tools           []string // the only tools it may use; all when empty
	DisallowedTools []string
	Keys            []string
	Body            string
	BodyLine        int
}

// Problem is a located finding.
type Problem struct {
	Line   int
	Reason string
}

func (p Problem) String() string { return fmt.Sprintf("%d: %s", p.Line, p.Reason) }

// What a frontmatter value must be.
const (
	kString = "string"
	kBool   = "bool"
	kInt    = "int"
	kTools  = "tools" // a comma-separated string or a list of strings
	kAny    = "any"
)

// argIndexRe is an indexed argument placeholder of a skill's body: $0 is
// the first argument, $1 the second (Claude Code's skills docs, "Available
// string substitutions").
var argIndexRe = regexp.MustCompile(`\$[0-9]`)

// skillKeys are the frontmatter keys Claude Code documents for skills
// (https://code.claude.com/docs/en/skills).
var skillKeys = map[string]string{
	"name": kString, "description": kString, "when_to_use": kString, "argument-hint": kString,
	"arguments": kAny, "disable-model-invocation": kBool, "user-invocable": kBool,
	"allowed-tools": kTools, "disallowed-tools": kTools, "model": kString, "effort": kAny,
	"context": kString, "agent": kString, "background": kAny, "hooks": kAny, "paths": kAny,
	"shell": kString, "metadata": kAny, "license": kString, "compatibility": kString,
}

// agentKeys are the frontmatter keys Claude Code documents for sub-agents
// (https://code.claude.com/docs/en/sub-agents), plus hobbs, Hobbs's own
// section naming the memory tags an agent receives (docs/agents.md).
var agentKeys = map[string]string{
	"name": kString, "description": kString, "tools": kTools, "disallowedTools": kTools,
	"model": kString, "permissionMode": kString, "maxTurns": kInt, "skills": kAny, "mcpServers": kAny,
	"hooks": kAny, "memory": kString, "background": kBool, "omitClaudeMd": kBool, "effort": kAny,
	"isolation": kString, "color": kString, "initialPrompt": kString,
	"hobbs": kAny,
}

// front is a parsed frontmatter block: its values by key, checked against a
// key table.
type front struct {
	strs     map[string]string
	tools    map[string][]string
	keys     []string
	body     string
	bodyLine int
}

// parseFront parses Markdown with frontmatter between "---" lines and
// checks every key against known. Type errors and unknown keys are returned
// as problems with their line.
func parseFront(data []byte, known map[string]string) (*front, []Problem) {
	fm, body, end, err := frontmatter.Block(bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n")))
	if err != nil {
		pe := err.(*frontmatter.ParseError)
		return nil, []Problem{{pe.Line, pe.Reason}}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(fm, &root); err != nil {
		return nil, []Problem{{2, "frontmatter: " + strings.TrimPrefix(err.Error(), "yaml: ")}}
	}
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return nil, []Problem{{2, "frontmatter must be a mapping"}}
	}
	f := &front{strs: map[string]string{}, tools: map[string][]string{}, body: string(body), bodyLine: end + 2}
	var probs []Problem
	m := root.Content[0]
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		line := k.Line + 1
		if seen[k.Value] {
			probs = append(probs, Problem{line, fmt.Sprintf("duplicate key %q", k.Value)})
		}
		seen[k.Value] = true
		f.keys = append(f.keys, k.Value)
		kind, ok := known[k.Value]
		if !ok {
			probs = append(probs, Problem{line, fmt.Sprintf("unknown key %q", k.Value)})
			continue
		}
		scalar := v.Kind == yaml.ScalarNode
		switch kind {
		case kString:
			if !scalar || v.Tag != "!!str" {
				probs = append(probs, Problem{line, fmt.Sprintf("%s must be a string", k.Value)})
				continue
			}
		case kBool:
			if !scalar || v.Tag != "!!bool" {
				probs = append(probs, Problem{line, fmt.Sprintf("%s must be true or false", k.Value)})
				continue
			}
		case kInt:
			if !scalar || v.Tag != "!!int" {
				probs = append(probs, Problem{line, fmt.Sprintf("%s must be a whole number", k.Value)})
				continue
			}
		case kTools:
			switch {
			case scalar && v.Tag == "!!str":
				f.tools[k.Value] = append(f.tools[k.Value], splitTools(v.Value)...)
			case v.Kind == yaml.SequenceNode:
				for _, t := range v.Content {
					if t.Kind != yaml.ScalarNode || t.Tag != "!!str" {
						probs = append(probs, Problem{t.Line + 1, k.Value + " entries must be strings"})
						continue
					}
					f.tools[k.Value] = append(f.tools[k.Value], t.Value)
				}
			default:
				probs = append(probs, Problem{line, k.Value + " must be a string or a list of strings"})
			}
			continue
		}
		if scalar {
			f.strs[k.Value] = v.Value
		}
	}
	return f, probs
}

// ParseSkill parses a SKILL.md: frontmatter between "---" lines, then the
// body. Type errors are returned as problems with their line.
func ParseSkill(data []byte) (*Skill, []Problem) {
	f, probs := parseFront(data, skillKeys)
	if f == nil {
		return nil, probs
	}
	return &Skill{Name: f.strs["name"], Description: f.strs["description"], ArgumentHint: f.strs["argument-hint"],
		AllowedTools: f.tools["allowed-tools"], DisallowedTools: f.tools["disallowed-tools"],
		DisableModelInvocation: f.strs["disable-model-invocation"] == "true",
		Keys:                   f.keys, Body: f.body, BodyLine: f.bodyLine}, probs
}

// ParseAgent parses a sub-agent file: frontmatter, then the system prompt.
func ParseAgent(data []byte) (*Agent, []Problem) {
	f, probs := parseFront(data, agentKeys)
	if f == nil {
		return nil, probs
	}
	return &Agent{Name: f.strs["name"], Description: f.strs["description"], Tools: f.tools["tools"],
		DisallowedTools: f.tools["disallowedTools"], Keys: f.keys, Body: f.body, BodyLine: f.bodyLine}, probs
}

// splitTools splits "Bash(git add:*), Read, Edit" at the commas outside
// parentheses.
func splitTools(v string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range v {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(v[start:i]))
				start = i + 1
			}
		}
	}
	if t := strings.TrimSpace(v[start:]); t != "" {
		out = append(out, t)
	}
	return out
}

var (
	skillNameRe = regexp.MustCompile(`^[a-z0-9]+(?:-[a-z0-9]+)*$`)
	xmlTagRe    = regexp.MustCompile(`<[A-Za-z/!?]`)
	envNameRe   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	toolRe      = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*(?:\([^()]+\))?$|^mcp__[A-Za-z0-9_-]+(?:__[A-Za-z0-9_*-]+)?$`)
)

// ValidateSkill checks a parsed skill against the rules; dir is the name of
// the directory holding SKILL.md, which must equal the skill's name.
func ValidateSkill(dir string, s *Skill) []Problem {
	var probs []Problem
	add := func(format string, args ...any) { probs = append(probs, Problem{1, fmt.Sprintf(format, args...)}) }
	switch {
	case s.Name == "":
		add("name is required")
	case len(s.Name) > 64:
		add("name is %d characters, at most 64", len(s.Name))
	case !skillNameRe.MatchString(s.Name):
		add("name %q is not kebab-case (lower-case letters, digits, single hyphens)", s.Name)
	case strings.Contains(s.Name, "anthropic") || strings.Contains(s.Name, "claude"):
		add("name %q contains a reserved word (anthropic, claude)", s.Name)
	}
	if s.Name != "" && s.Name != dir {
		add("name %q differs from its directory %q", s.Name, dir)
	}
	probs = append(probs, checkDescription(s.Description)...)
	probs = append(probs, checkTools("allowed-tools", s.AllowedTools)...)
	probs = append(probs, checkTools("disallowed-tools", s.DisallowedTools)...)
	if strings.TrimSpace(s.Body) == "" {
		probs = append(probs, Problem{s.BodyLine, "the body is empty"})
	}
	uses := strings.Contains(s.Body, "$ARGUMENTS") || argIndexRe.MatchString(s.Body)
	if s.ArgumentHint != "" && !uses {
		probs = append(probs, Problem{s.BodyLine, "argument-hint is set but the body never uses $ARGUMENTS or $N"})
	}
	if uses && s.ArgumentHint == "" {
		add("the body uses $ARGUMENTS or $N: give an argument-hint")
	}
	return probs
}

// ValidateAgent checks a parsed sub-agent; file is its file name without
// .md, which must equal the agent's name.
func ValidateAgent(file string, a *Agent) []Problem {
	var probs []Problem
	add := func(format string, args ...any) { probs = append(probs, Problem{1, fmt.Sprintf(format, args...)}) }
	switch {
	case a.Name == "":
		add("name is required")
	case len(a.Name) > 64 || !skillNameRe.MatchString(a.Name):
		add("name %q is not kebab-case of at most 64 characters", a.Name)
	}
	if a.Name != "" && a.Name != file {
		add("name %q differs from its file name %q", a.Name, file+".md")
	}
	probs = append(probs, checkDescription(a.Description)...)
	probs = append(probs, checkTools("tools", a.Tools)...)
	probs = append(probs, checkTools("disallowedTools", a.DisallowedTools)...)
	if strings.TrimSpace(a.Body) == "" {
		probs = append(probs, Problem{a.BodyLine, "the system prompt (body) is empty"})
	}
	return probs
}

func checkDescription(d string) []Problem {
	switch n := len([]rune(d)); {
	case strings.TrimSpace(d) == "":
		return []Problem{{1, "description is required"}}
	case n > 1024:
		return []Problem{{1, fmt.Sprintf("description is %d characters, at most 1024", n)}}
	case xmlTagRe.MatchString(d):
		return []Problem{{1, "description must not contain XML tags"}}
	}
	return nil
}

// checkTools checks tool rules: a tool name or Tool(specifier), and no
// ":*" suffix, which Claude Code deprecates in favour of " *".
func checkTools(key string, tools []string) []Problem {
	var probs []Problem
	for _, t := range tools {
		switch {
		case !toolRe.MatchString(t):
			probs = append(probs, Problem{1, fmt.Sprintf("%s entry %q is not a tool name or Tool(pattern)", key, t)})
		case strings.HasSuffix(t, ":*)"):
			probs = append(probs, Problem{1, fmt.Sprintf("%s entry %q uses the deprecated :* suffix; write %q",
				key, t, strings.TrimSuffix(t, ":*)")+" *)")})
		}
	}
	return probs
}

// BashAllows reports whether tools (a skill's allowed-tools) pre-approve
// the Bash command line: "Bash" approves every command, "Bash(prefix *)"
// a command that starts with prefix and a space, the deprecated
// "Bash(prefix:*)" prefix alone or followed by a space, "Bash(command)"
// that command exactly.
func BashAllows(tools []string, line string) bool {
	for _, t := range tools {
		if t == "Bash" {
			return true
		}
		rule, ok := strings.CutPrefix(t, "Bash(")
		if !ok || !strings.HasSuffix(rule, ")") {
			continue
		}
		rule = strings.TrimSuffix(rule, ")")
		if prefix, ok := strings.CutSuffix(rule, ":*"); ok {
			if line == prefix || strings.HasPrefix(line, prefix+" ") {
				return true
			}
		} else if prefix, ok := strings.CutSuffix(rule, " *"); ok {
			if strings.HasPrefix(line, prefix+" ") {
				return true
			}
		} else if line == rule {
			return true
		}
	}
	return false
}

// Headings returns the ATX headings outside fenced code, as "## Title".
func Headings(md []byte) []string {
	var out []string
	for _, l := range proseLines(md) {
		t := strings.TrimRight(l.text, " #")
		if strings.HasPrefix(t, "#") {
			i := strings.IndexFunc(t, func(r rune) bool { return r != '#' })
			if i > 0 && i <= 6 && t[i] == ' ' {
				out = append(out, t[:i]+" "+strings.TrimSpace(t[i:]))
			}
		}
	}
	return out
}

type mdLine struct {
	n     int // 1-based
	text  string
	fence bool // inside a fenced code block
}

// lines classifies each line as prose or fenced code (fence lines dropped).
func lines(md []byte) []mdLine {
	var out []mdLine
	fence := ""
	for i, l := range strings.Split(strings.ReplaceAll(string(md), "\r\n", "\n"), "\n") {
		t := strings.TrimLeft(l, " ")
		if fence != "" {
			if strings.HasPrefix(t, fence) && strings.TrimSpace(strings.TrimLeft(t, fence[:1])) == "" {
				fence = ""
				continue
			}
			out = append(out, mdLine{i + 1, l, true})
			continue
		}
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			n := len(t) - len(strings.TrimLeft(t, t[:1]))
			fence = strings.Repeat(t[:1], n)
			continue
		}
		out = append(out, mdLine{i + 1, l, false})
	}
	return out
}

func proseLines(md []byte) []mdLine {
	var out []mdLine
	for _, l := range lines(md) {
		if !l.fence {
			out = append(out, l)
		}
	}
	return out
}

// Command is one `hobbs …` invocation quoted in Markdown.
type Command struct {
	Line int      // 1-based line where it starts
	Text string   // the quoted text it came from
	Args []string // shell words after "hobbs", up to a pipe, redirection or comment
}

func (c Command) String() string { return "hobbs " + strings.Join(c.Args, " ") }

var inlineRe = regexp.MustCompile("(`+)([^`]+?)(`+)")

// Commands extracts every hobbs invocation from fenced code blocks and inline
// code spans. In fenced blocks, "$ " prompts are dropped, lines ending in a
// backslash are joined, and here-document bodies are skipped.
func Commands(md []byte) []Command {
	var out []Command
	ls := lines(md)
	// Fenced code, line by line.
	heredoc := ""
	for i := 0; i < len(ls); i++ {
		l := ls[i]
		if !l.fence {
			heredoc = ""
			continue
		}
		if heredoc != "" {
			if strings.TrimSpace(l.text) == heredoc {
				heredoc = ""
			}
			continue
		}
		text := strings.TrimSpace(l.text)
		start := l.n
		for strings.HasSuffix(text, "\\") && i+1 < len(ls) && ls[i+1].fence {
			i++
			text = strings.TrimSuffix(text, "\\") + " " + strings.TrimSpace(ls[i].text)
		}
		text = strings.TrimPrefix(text, "$ ")
		words, hd := shellWords(text)
		heredoc = hd
		out = append(out, commandsIn(words, start, text)...)
	}
	// Inline code spans in prose; a span may continue on the next line.
	var prose bytes.Buffer
	var lineOf []int // line number of each byte offset's line start
	for _, l := range ls {
		if l.fence {
			prose.WriteString("\n")
			lineOf = append(lineOf, l.n)
			continue
		}
		prose.WriteString(l.text + "\n")
		lineOf = append(lineOf, l.n)
	}
	text := prose.String()
	for _, m := range inlineRe.FindAllStringSubmatchIndex(text, -1) {
		if text[m[2]:m[3]] != text[m[6]:m[7]] {
			continue
		}
		code := strings.ReplaceAll(text[m[4]:m[5]], "\n", " ")
		line := lineOf[strings.Count(text[:m[0]], "\n")]
		words, _ := shellWords(strings.TrimSpace(code))
		out = append(out, commandsIn(words, line, code)...)
	}
	// "hobbs proxy: CONNECT … denied" is a quoted message, not an invocation:
	// no command name ends with a colon.
	kept := out[:0]
	for _, c := range out {
		if len(c.Args) == 0 || !strings.HasSuffix(c.Args[0], ":") {
			kept = append(kept, c)
		}
	}
	return kept
}

// commandsIn finds hobbs invocations in a word list where operators are
// separate words ("|", "&&", ";", "(", ")", redirections).
func commandsIn(words []word, line int, text string) []Command {
	var out []Command
	atStart := true
	var cur *Command
	skipNext := false
	for _, w := range words {
		if skipNext {
			skipNext = false
			continue
		}
		if w.op {
			if isRedirect(w.s) {
				skipNext = true // the target file or here-doc delimiter
				cur = nil       // arguments end at a redirection
				continue
			}
			atStart, cur = true, nil
			continue
		}
		if cur != nil {
			cur.Args = append(cur.Args, w.s)
			continue
		}
		if atStart {
			if isAssignment(w) {
				continue
			}
			if w.s == "hobbs" && !w.quoted {
				out = append(out, Command{Line: line, Text: text})
				cur = &out[len(out)-1]
			}
			atStart = false
		}
	}
	return out
}

func isRedirect(op string) bool { return strings.ContainsAny(op, "<>") }

func isAssignment(w word) bool {
	i := strings.IndexByte(w.s, '=')
	return !w.quoted && i > 0 && envNameRe.MatchString(w.s[:i])
}

type word struct {
	s      string
	op     bool // an operator: | || & && ; ( ) $( < > >> << 2> …
	quoted bool // contained quotes
}

// shellWords splits a command line into words and operators with POSIX-like
// quoting. It returns the here-document delimiter if the line opens one.
// A "#" starting a word begins a comment.
func shellWords(s string) ([]word, string) {
	var out []word
	var cur strings.Builder
	inWord, quoted := false, false
	heredoc := ""
	flush := func() {
		if inWord {
			out = append(out, word{s: cur.String(), quoted: quoted})
		}
		cur.Reset()
		inWord, quoted = false, false
	}
	op := func(o string) {
		flush()
		out = append(out, word{s: o, op: true})
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				j = len(s) - i - 1
			}
			cur.WriteString(s[i+1 : i+1+j])
			inWord, quoted = true, true
			i += j + 1
		case c == '"':
			inWord, quoted = true, true
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		case c == ' ' || c == '\t':
			flush()
		case c == '#' && !inWord:
			flush()
			return out, heredoc
		case c == '|' || c == '&' || c == ';':
			o := string(c)
			if i+1 < len(s) && s[i+1] == c {
				o += string(c)
				i++
			}
			op(o)
		case c == '$' && i+1 < len(s) && s[i+1] == '(':
			op("$(")
			i++
		case c == '(' || c == ')':
			op(string(c))
		case c == '<' || c == '>':
			o := string(c)
			if cur.Len() > 0 && strings.Trim(cur.String(), "0123456789") == "" && !quoted {
				o = cur.String() + o // 2> and friends
				cur.Reset()
				inWord = false
			}
			flush()
			for i+1 < len(s) && (s[i+1] == '<' || s[i+1] == '>' || s[i+1] == '&' || s[i+1] == '-') {
				i++
				o += string(s[i])
			}
			out = append(out, word{s: o, op: true})
			if strings.HasPrefix(o, "<<") && !strings.HasPrefix(o, "<<<") {
				// The next word is the delimiter.
				rest := strings.TrimLeft(s[i+1:], " ")
				ws, _ := shellWords(rest)
				if len(ws) > 0 && !ws[0].op {
					heredoc = ws[0].s
				}
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	flush()
	return out, heredoc
}
