// Package subagent manages Hobbs's sub-agent definitions and their
// operational learnings — the "Task Delegation" flow of the seed.
//
// A definition is a Claude Code subagent file (Markdown with frontmatter
// name, description, tools, model) plus a `hobbs:` section naming the memory
// tags the agent gets:
//
//	---
//	name: researcher
//	description: Finds and summarises sources.
//	tools: Read, Grep, Glob, WebFetch, WebSearch
//	model: inherit
//	hobbs:
//	  tags: [research]
//	---
//	system prompt…
//
// Framework agents ship inside the binary and the image (src/agents/*.md);
// custom agents live in the instance at agents/custom/NAME.md. A custom agent
// may not reuse a framework agent's name. "hobbs" names the top-level agent
// itself: it has operational learnings but no definition file.
//
// Each agent's operational learnings — lessons about how to do its work —
// live in agents/NAME/operational.md as dated bullets, appended by Learn,
// which refuses duplicates (compared with memory.Normalize, as memories
// are) so the file stays a list of distinct lessons.
package subagent

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/frontmatter"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/memory"
)

// Hobbs is the name of the top-level agent.
const Hobbs = "hobbs"

// Sources of a definition.
const (
	SourceIdentity  = "identity"
	SourceFramework = "framework"
	SourceCustom    = "custom"
)

// Definition is one sub-agent.
type Definition struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tools       string   `json:"tools,omitempty"`
	Model       string   `json:"model,omitempty"`
	Tags        []string `json:"tags"`
	Source      string   `json:"source"`
	Path        string   `json:"path,omitempty"` // file path, or "embedded:src/agents/NAME.md"
	Prompt      string   `json:"-"`
}

type fileFront struct {
	Name            string `yaml:"name"`
	Description     string `yaml:"description"`
	Tools           any    `yaml:"tools"` // Claude Code accepts a comma-separated string or a list
	DisallowedTools any    `yaml:"disallowedTools"`
	Model           string `yaml:"model"`
	Color           string `yaml:"color"`
	PermissionMode  string `yaml:"permissionMode"`
	Skills          any    `yaml:"skills"`
	Hobbs           struct {
		Tags []string `yaml:"tags"`
	} `yaml:"hobbs"`
}

var nameRe = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)

// ValidName checks an agent name: kebab-case, at most 64 characters.
func ValidName(name string) error {
	if len(name) > 64 || !nameRe.MatchString(name) {
		return errs.Usagef("invalid agent name %q", name).
			Advise(BadName)
	}
	return nil
}

// Parse reads a definition file. Unknown frontmatter keys are allowed
// (Claude Code grows new ones); a missing name or description, or a name that
// does not match the file name, is an error.
func Parse(p string, data []byte, wantName string) (*Definition, error) {
	var f fileFront
	body, node, err := frontmatter.Decode(p, data, &f, false)
	if err != nil {
		return nil, err
	}
	switch {
	case f.Name == "":
		return nil, &frontmatter.ParseError{Path: p, Line: node.Line, Reason: "missing name"}
	case f.Name != wantName:
		return nil, &frontmatter.ParseError{Path: p, Line: frontmatter.KeyLine(node, "name"),
			Reason: fmt.Sprintf("name %q does not match the file name %q", f.Name, wantName+".md")}
	case strings.TrimSpace(f.Description) == "":
		return nil, &frontmatter.ParseError{Path: p, Line: node.Line, Reason: "missing description"}
	}
	if err := ValidName(f.Name); err != nil {
		return nil, &frontmatter.ParseError{Path: p, Line: frontmatter.KeyLine(node, "name"), Reason: err.Error()}
	}
	tags := f.Hobbs.Tags
	if tags == nil {
		tags = []string{}
	}
	return &Definition{Name: f.Name, Description: strings.TrimSpace(f.Description), Tools: toolsString(f.Tools),
		Model: f.Model, Tags: tags, Path: p, Prompt: strings.TrimSpace(string(body))}, nil
}

func toolsString(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case []any:
		var s []string
		for _, x := range t {
			s = append(s, fmt.Sprint(x))
		}
		return strings.Join(s, ", ")
	}
	return ""
}

// Catalog finds definitions: framework ones in an embedded tree (files
// NAME.md at its root) and custom ones in the instance.
type Catalog struct {
	Instance  instance.Instance
	Framework fs.FS // src/agents of the binary's assets; may be nil
	// Templates holds agent.md and operational.md, what New and Learn start
	// a file from (the binary's templates/); may be nil.
	Templates fs.FS
	// Audit records New (agent.new) and Learn (agent.learn); nil: nothing.
	Audit *audit.Logger
}

// template is the template file name of c.Templates (nil when none).
func (c Catalog) template(name string) []byte {
	if c.Templates == nil {
		return nil
	}
	b, _ := fs.ReadFile(c.Templates, name)
	return b
}

// Problem is a definition file that could not be read. It is reported, never
// rewritten.
type Problem = frontmatter.Problem

// List returns every agent (identity first, then by name) and the files that
// could not be parsed.
func (c Catalog) List() ([]*Definition, []Problem) {
	defs := []*Definition{{Name: Hobbs, Description: "The top-level Hobbs agent (identity in the image).",
		Tags: []string{}, Source: SourceIdentity}}
	var probs []Problem
	seen := map[string]bool{Hobbs: true}
	if c.Framework != nil {
		ents, _ := fs.ReadDir(c.Framework, ".")
		for _, e := range ents {
			name, ok := strings.CutSuffix(e.Name(), ".md")
			if e.IsDir() || !ok {
				continue
			}
			p := "embedded:src/agents/" + e.Name()
			data, err := fs.ReadFile(c.Framework, e.Name())
			if err == nil {
				var d *Definition
				if d, err = Parse(p, data, name); err == nil {
					d.Source = SourceFramework
					defs = append(defs, d)
					seen[name] = true
					continue
				}
			}
			probs = append(probs, frontmatter.ProblemOf(p, err))
		}
	}
	dir := c.Instance.AgentsCustom()
	ents, err := c.Instance.FS().ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		probs = append(probs, frontmatter.ProblemOf(dir, err))
	}
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".md")
		if e.IsDir() || !ok || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p := path.Join(dir, e.Name())
		if seen[name] {
			probs = append(probs, Problem{Path: p, Reason: fmt.Sprintf("%q is a framework agent's name; this file is ignored", name)})
			continue
		}
		data, err := c.Instance.FS().ReadFile(p, instance.MaxAgentFile)
		if err == nil {
			var d *Definition
			if d, err = Parse(p, data, name); err == nil {
				d.Source = SourceCustom
				defs = append(defs, d)
				continue
			}
		}
		probs = append(probs, frontmatter.ProblemOf(p, err))
	}
	sort.SliceStable(defs[1:], func(i, j int) bool { return defs[1+i].Name < defs[1+j].Name })
	return defs, probs
}

// Get returns the named agent, or an error that lists what exists.
func (c Catalog) Get(name string) (*Definition, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	defs, probs := c.List()
	for _, d := range defs {
		if d.Name == name {
			return d, nil
		}
	}
	for _, p := range probs {
		if strings.HasSuffix(p.Path, "/"+name+".md") {
			return nil, errs.Failf("agent %q cannot be read: %s", name, p).
				Advise(Unreadable)
		}
	}
	var names []string
	for _, d := range defs {
		names = append(names, d.Name)
	}
	return nil, errs.Failf("no agent named %q", name).Advise(NoAgent, "known", strings.Join(names, ", "))
}

// Shown is an agent as hobbs agent show prints it: its definition, its
// prompt and its operational learnings.
type Shown struct {
	*Definition
	Prompt      string `json:"prompt"`
	Operational string `json:"operational"`
}

// Show returns agent name with its prompt and operational learnings.
func (c Catalog) Show(name string) (Shown, error) {
	d, err := c.Get(name)
	if err != nil {
		return Shown{}, err
	}
	op, err := Operational(c.Instance, d.Name)
	return Shown{Definition: d, Prompt: d.Prompt, Operational: op}, err
}

// ListColumns is the header of hobbs agent list, the columns of Row.
const ListColumns = "NAME\tSOURCE\tTAGS\tDESCRIPTION"

// Row is the agent's line of hobbs agent list, tab-separated: name,
// source, memory tags ("-" for none), description.
func (d *Definition) Row() string {
	tags := strings.Join(d.Tags, ",")
	if strings.TrimSpace(tags) == "" {
		tags = "-"
	}
	return fmt.Sprintf("%s\t%s\t%s\t%s", d.Name, d.Source, tags, d.Description)
}

// WriteSummary prints the agent for a reader, as hobbs agent show does:
// name, source, file (a custom agent's), description, tags, tools (when
// set), then its prompt and its operational learnings.
func (v Shown) WriteSummary(w io.Writer) error {
	d := v.Definition
	fmt.Fprintf(w, "name:        %s\nsource:      %s\n", d.Name, d.Source)
	if d.Path != "" {
		fmt.Fprintf(w, "file:        %s\n", d.Path)
	}
	fmt.Fprintf(w, "description: %s\ntags:        %s\n", d.Description, strings.Join(d.Tags, ", "))
	if d.Tools != "" {
		fmt.Fprintf(w, "tools:       %s\n", d.Tools)
	}
	if v.Prompt != "" {
		fmt.Fprintf(w, "\n%s\n", v.Prompt)
	}
	if v.Operational != "" {
		fmt.Fprintf(w, "\n%s", v.Operational)
	}
	return nil
}

// NewOptions configures New.
type NewOptions struct {
	Name        string
	Description string
	Tags        []string
	Template    []byte // templates/agent.md
	Operational []byte // templates/operational.md
}

// New writes agents/custom/NAME.md from the template and creates the agent's
// operational.md (templates default to c.Templates'). It refuses an
// existing or framework name. The audit event is agent.new.
func (c Catalog) New(o NewOptions) (*Definition, error) {
	if o.Template == nil {
		o.Template = c.template("agent.md")
	}
	if o.Operational == nil {
		o.Operational = c.template("operational.md")
	}
	d, err := c.create(o)
	c.Audit.Record(audit.Entry{Event: "agent.new", Subject: o.Name}, err)
	return d, err
}

func (c Catalog) create(o NewOptions) (*Definition, error) {
	if err := ValidName(o.Name); err != nil {
		return nil, err
	}
	if o.Name == Hobbs {
		return nil, errs.Usagef("%q is the top-level agent", Hobbs).Advise(NameTaken)
	}
	if c.Framework != nil {
		if _, err := fs.Stat(c.Framework, o.Name+".md"); err == nil {
			return nil, errs.Usagef("%q is a framework agent", o.Name).Advise(NameTaken)
		}
	}
	if len(o.Tags) == 0 {
		return nil, errs.Usagef("an agent needs at least one memory tag").Advise(NoTags)
	}
	for _, t := range o.Tags {
		if !tagRe.MatchString(t) {
			return nil, errs.Usagef("invalid tag %q", t).Advise(BadTag)
		}
	}
	desc := strings.TrimSpace(o.Description)
	if desc == "" {
		desc = "Hobbs sub-agent for " + strings.Join(o.Tags, ", ") + "."
	}
	if strings.ContainsAny(desc, "\n\r") {
		return nil, errs.Usagef("the description must be one line")
	}
	r := strings.NewReplacer("{{NAME}}", o.Name, "{{DESCRIPTION_YAML}}", strconv.Quote(desc),
		"{{DESCRIPTION}}", desc, "{{TAGS}}", "["+strings.Join(o.Tags, ", ")+"]")
	doc := r.Replace(string(o.Template))
	p := path.Join(c.Instance.AgentsCustom(), o.Name+".md")
	d, err := Parse(p, []byte(doc), o.Name)
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "agent template produced an invalid definition")
	}
	if err := c.Instance.FS().MkdirAll(c.Instance.AgentsCustom(), 0o755); err != nil {
		return nil, err
	}
	if err := c.Instance.FS().Create(p, []byte(doc), 0o644); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, errs.Usagef("agent %q already exists: %s", o.Name, p).Advise(Exists)
		}
		return nil, err
	}
	if err := ensureOperational(c.Instance, o.Name, o.Operational); err != nil {
		return nil, err
	}
	d.Source = SourceCustom
	return d, nil
}

var tagRe = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

func ensureOperational(in instance.Instance, name string, tpl []byte) error {
	if err := in.FS().MkdirAll(in.AgentDir(name), 0o755); err != nil {
		return err
	}
	data := bytes.ReplaceAll(tpl, []byte("Operational learnings: hobbs"), []byte("Operational learnings: "+name))
	data = bytes.ReplaceAll(data, []byte("hobbs agent learn hobbs"), []byte("hobbs agent learn "+name))
	err := in.FS().Create(in.Operational(name), data, 0o644)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// Operational returns the agent's operational.md ("" when it has none).
func Operational(in instance.Instance, name string) (string, error) {
	b, err := in.FS().ReadFile(in.Operational(name), instance.MaxAgentFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return string(b), err
}

// LearnResult says what Learn did.
type LearnResult struct {
	Agent     string `json:"agent"`
	Added     bool   `json:"added"`
	Line      int    `json:"line"` // line of the new learning, or of the existing duplicate
	Text      string `json:"text"`
	Duplicate string `json:"duplicate_of,omitempty"`
}

var learningRe = regexp.MustCompile(`^- (?:\d{4}-\d{2}-\d{2}: )?(.*)$`)

// Learn is the package's Learn for an agent of c (operational.md started
// from c.Templates'), recorded as agent.learn: outcome "duplicate" when the
// lesson was already there.
func (c Catalog) Learn(name, text string, now time.Time) (*LearnResult, error) {
	r, err := Learn(c.Instance, name, text, now, c.template("operational.md"))
	e := audit.Entry{Event: "agent.learn", Subject: name}
	if r != nil && !r.Added {
		e.Outcome = "duplicate"
	}
	c.Audit.Record(e, err)
	return r, err
}

// Learn appends "- YYYY-MM-DD: text" to the agent's operational.md unless the
// same lesson (after normalisation) is already there. It runs under the
// instance's "agents" lock and writes atomically.
func Learn(in instance.Instance, name, text string, now time.Time, tpl []byte) (*LearnResult, error) {
	text = strings.Join(strings.Fields(text), " ")
	if text == "" {
		return nil, errs.Usagef("empty learning").Advise(EmptyLearn)
	}
	if err := in.FS().MkdirAll(filepath.Dir(in.Lock("agents")), 0o755); err != nil {
		return nil, err
	}
	unlock, err := in.FS().Lock(in.Lock("agents"), 30*time.Second)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := ensureOperational(in, name, tpl); err != nil {
		return nil, err
	}
	p := in.Operational(name)
	data, err := in.FS().ReadFile(p, instance.MaxAgentFile)
	if err != nil {
		return nil, err
	}
	key := memory.Normalize(text)
	lines := strings.Split(string(data), "\n")
	for i, l := range lines {
		if m := learningRe.FindStringSubmatch(strings.TrimSpace(l)); m != nil && memory.Normalize(m[1]) == key {
			return &LearnResult{Agent: name, Added: false, Line: i + 1, Text: text, Duplicate: strings.TrimSpace(l)}, nil
		}
	}
	out := strings.TrimRight(string(data), "\n") + "\n"
	if !strings.Contains(out, "\n- ") && !strings.HasPrefix(out, "- ") {
		out += "\n"
	}
	entry := fmt.Sprintf("- %s: %s\n", now.UTC().Format("2006-01-02"), text)
	line := strings.Count(out, "\n") + 1
	if err := in.FS().Write(p, []byte(out+entry), 0o644); err != nil {
		return nil, err
	}
	return &LearnResult{Agent: name, Added: true, Line: line, Text: text}, nil
}
