// Package playbook manages the instance's playbooks: documented workflows on
// their way from manual to autonomous. A playbook is one Markdown file,
// playbooks/<name>.md, with YAML frontmatter (title, stage, tags, created,
// updated, last_reviewed, review_every, run) and the body sections Trigger,
// Inputs, Steps, Outputs, Judgment Calls, Sensitive Data, Automation
// Potential and Notes.
//
// The stage follows the automation ladder manual → assisted → supervised →
// autonomous. A playbook moves up one rung at a time and may move down any
// number; every move is dated under Notes with its reason. A playbook is due
// for review when review_every days have passed since last_reviewed.
//
// The run: block declares what a headless run needs (run.go); the stage
// gates, the run's spec (its hosts intersected with the instance policy)
// and the per-playbook run lock are in headless.go.
//
// Files stay the user's: updates rewrite only the frontmatter lines they
// change and append to Notes, atomically and under the instance's playbooks
// lock. A file that does not parse is reported as path:line: reason and never
// rewritten.
package playbook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/hobbs-agent/hobbs/src/frontmatter"
)

// Stages of the automation ladder, lowest first.
var Stages = []string{"manual", "assisted", "supervised", "autonomous"}

// StageIndex returns the rung of stage s on the ladder, or -1.
func StageIndex(s string) int {
	for i, st := range Stages {
		if st == s {
			return i
		}
	}
	return -1
}

// Sections are the body headings (## level) every playbook has, in order.
var Sections = []string{"Trigger", "Inputs", "Steps", "Outputs", "Judgment Calls", "Sensitive Data",
	"Automation Potential", "Notes"}

// DateLayout is how dates are written in the frontmatter.
const DateLayout = "2006-01-02"

var nameRe = regexp.MustCompile(`^[a-z0-9]+(?:-[a-z0-9]+)*$`)

// ValidName reports whether name is a valid playbook name: kebab-case
// (lower-case letters and digits separated by single hyphens), at most 64
// characters.
func ValidName(name string) bool { return len(name) <= 64 && nameRe.MatchString(name) }

// Meta is a playbook's frontmatter.
type Meta struct {
	Title        string   `json:"title"`
	Stage        string   `json:"stage"`
	Tags         []string `json:"tags"`
	Created      string   `json:"created,omitempty"`
	Updated      string   `json:"updated,omitempty"`
	LastReviewed string   `json:"last_reviewed,omitempty"`
	ReviewEvery  int      `json:"review_every,omitempty"` // days; 0: the instance default
	// Run is what a headless run needs (the run: block); nil when the
	// playbook declares nothing.
	Run *Run `json:"run,omitempty"`
}

// knownKeys are the frontmatter keys a playbook may have.
var knownKeys = []string{"title", "stage", "tags", "created", "updated", "last_reviewed", "review_every", "run"}

// Problem is one thing wrong with a file, located by line (1-based; 0 when
// it concerns the whole file).
type Problem = frontmatter.Problem

// ParseError is returned for a file that cannot be used: no frontmatter,
// broken YAML, a value of the wrong type or out of range.
type ParseError struct{ Problem }

func (e *ParseError) Error() string { return e.Problem.String() }

// Doc is a parsed playbook file.
type Doc struct {
	Path string
	Meta Meta
	// Lint lists non-fatal problems found while parsing (missing keys,
	// unknown keys, missing sections). A Doc with lint problems is usable.
	Lint []Problem

	raw      []byte
	fmEnd    int            // line index (0-based) of the closing "---"
	keyLines map[string]int // frontmatter key → 0-based line index in the file
	indented bool           // the frontmatter mapping does not start at column 1
}

// Raw returns the file's bytes as read.
func (d *Doc) Raw() []byte { return d.raw }

// Body returns the text after the frontmatter.
func (d *Doc) Body() string {
	lines := splitLines(d.raw)
	if d.fmEnd+1 >= len(lines) {
		return ""
	}
	return strings.Join(lines[d.fmEnd+1:], "")
}

// splitLines splits b after each "\n", keeping the terminators.
func splitLines(b []byte) []string {
	var out []string
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			out = append(out, string(b))
			break
		}
		out = append(out, string(b[:i+1]))
		b = b[i+1:]
	}
	return out
}

func trimEOL(s string) string { return strings.TrimRight(s, "\r\n") }

// Parse parses a playbook file's content; path names it in problems. It
// returns a *ParseError when the file cannot be used; otherwise the Doc,
// whose Lint field lists what `hobbs playbook lint` would report.
func Parse(path string, data []byte) (*Doc, error) {
	d := &Doc{Path: path, raw: data, keyLines: map[string]int{}}
	fail := func(line int, format string, args ...any) (*Doc, error) {
		return nil, &ParseError{Problem{Path: path, Line: line, Reason: fmt.Sprintf(format, args...)}}
	}
	lint := func(line int, format string, args ...any) {
		d.Lint = append(d.Lint, Problem{Path: path, Line: line, Reason: fmt.Sprintf(format, args...)})
	}
	fm, _, closing, err := frontmatter.Block(data)
	if err != nil {
		pe := err.(*frontmatter.ParseError)
		return fail(pe.Line, "%s", pe.Reason)
	}
	d.fmEnd = closing
	lines := splitLines(data)
	var root yaml.Node
	if err := yaml.Unmarshal(fm, &root); err != nil {
		line, msg := frontmatter.YAMLLine(err)
		line = max(line, 1)
		return fail(line+1, "frontmatter: %s", msg)
	}
	var m *yaml.Node
	if len(root.Content) > 0 {
		m = root.Content[0]
	}
	if m == nil || m.Kind != yaml.MappingNode {
		if m == nil {
			return fail(2, "frontmatter is empty")
		}
		return fail(m.Line+1, "frontmatter must be a mapping of keys to values")
	}
	d.indented = m.Column != 1 || m.Style&yaml.FlowStyle != 0
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		line := k.Line + 1
		key := k.Value
		if seen[key] {
			return fail(line, "duplicate key %q", key)
		}
		seen[key] = true
		d.keyLines[key] = k.Line // 1-based in fm == 0-based index in file
		switch key {
		case "title":
			s, ok := scalarString(v)
			if !ok {
				return fail(line, "title must be a string")
			}
			if strings.ContainsAny(s, "\n\r") {
				return fail(line, "title must be one line")
			}
			d.Meta.Title = s
		case "stage":
			s, ok := scalarString(v)
			if !ok || StageIndex(s) < 0 {
				return fail(line, "stage must be one of %s, got %q", strings.Join(Stages, ", "), v.Value)
			}
			d.Meta.Stage = s
		case "tags":
			if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
				break
			}
			if v.Kind != yaml.SequenceNode {
				return fail(line, "tags must be a list of strings")
			}
			for _, t := range v.Content {
				s, ok := scalarString(t)
				if !ok || s == "" {
					return fail(t.Line+1, "tags must be a list of non-empty strings")
				}
				d.Meta.Tags = append(d.Meta.Tags, s)
			}
		case "created", "updated", "last_reviewed":
			s, ok := scalarString(v)
			if !ok {
				return fail(line, "%s must be a date (YYYY-MM-DD)", key)
			}
			if _, err := ParseDate(s); err != nil {
				return fail(line, "%s: %v", key, err)
			}
			switch key {
			case "created":
				d.Meta.Created = s
			case "updated":
				d.Meta.Updated = s
			default:
				d.Meta.LastReviewed = s
			}
		case "review_every":
			n, err := strconv.Atoi(v.Value)
			if v.Kind != yaml.ScalarNode || err != nil || n < 1 || n > 3650 {
				return fail(line, "review_every must be a whole number of days from 1 to 3650, got %q", v.Value)
			}
			d.Meta.ReviewEvery = n
		case "run":
			r, probs, err := parseRun(path, v)
			if err != nil {
				return nil, err
			}
			d.Lint = append(d.Lint, probs...)
			d.Meta.Run = r
		default:
			lint(line, "unknown key %q (known: %s)", key, strings.Join(knownKeys, ", "))
		}
	}
	for _, k := range []string{"title", "stage", "created", "updated"} {
		if !seen[k] {
			lint(2, "missing key %q", k)
		}
	}
	if d.Meta.Stage == "" {
		d.Meta.Stage = Stages[0]
	}
	if d.Meta.Stage == "autonomous" && d.Meta.Run == nil {
		lint(d.keyLines["stage"]+1, "an autonomous playbook needs a run: block (hosts, secrets, tools, max_turns, timeout)")
	}
	if d.Meta.Tags == nil {
		d.Meta.Tags = []string{}
	}
	d.lintSections(lines)
	return d, nil
}

// scalarString returns v's value when v is a scalar that is not null.
func scalarString(v *yaml.Node) (string, bool) {
	if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
		return "", false
	}
	return v.Value, true
}

// ParseDate accepts YYYY-MM-DD or an RFC 3339 timestamp and returns the day.
func ParseDate(s string) (time.Time, error) {
	if t, err := time.Parse(DateLayout, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		y, m, dd := t.Date()
		return time.Date(y, m, dd, 0, 0, 0, 0, time.UTC), nil
	}
	return time.Time{}, fmt.Errorf("%q is not a date (YYYY-MM-DD)", s)
}

// heading is one "## " heading of the body.
type heading struct {
	title string
	line  int // 0-based index in the file
}

// headings lists the level-2 headings after the frontmatter, skipping fenced
// code blocks.
func headings(lines []string, from int) []heading {
	var hs []heading
	fence := ""
	for i := from; i < len(lines); i++ {
		l := trimEOL(lines[i])
		t := strings.TrimLeft(l, " ")
		if fence != "" {
			if strings.HasPrefix(t, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = t[:3]
			continue
		}
		if strings.HasPrefix(l, "## ") {
			hs = append(hs, heading{title: strings.TrimSpace(strings.TrimRight(strings.TrimSpace(l[3:]), "#")), line: i})
		}
	}
	return hs
}

func (d *Doc) lintSections(lines []string) {
	hs := headings(lines, d.fmEnd+1)
	have := map[string]int{}
	for _, h := range hs {
		k := strings.ToLower(h.title)
		if _, dup := have[k]; dup {
			d.Lint = append(d.Lint, Problem{Path: d.Path, Line: h.line + 1, Reason: fmt.Sprintf("duplicate section %q", h.title)})
			continue
		}
		have[k] = h.line
	}
	for _, s := range Sections {
		if _, ok := have[strings.ToLower(s)]; !ok {
			d.Lint = append(d.Lint, Problem{Path: d.Path, Line: 0, Reason: fmt.Sprintf("missing section \"## %s\"", s)})
		}
	}
}

// MissingSections returns the required sections body (Markdown without
// frontmatter) does not have.
func MissingSections(body string) []string {
	hs := headings(splitLines([]byte(body)), 0)
	have := map[string]bool{}
	for _, h := range hs {
		have[strings.ToLower(h.title)] = true
	}
	var missing []string
	for _, s := range Sections {
		if !have[strings.ToLower(s)] {
			missing = append(missing, s)
		}
	}
	return missing
}

// NextReview returns the day the playbook is next due for review given the
// instance default interval; ok is false when it has never been reviewed
// (no last_reviewed), which makes it due now.
func (m Meta) NextReview(defaultDays int) (t time.Time, ok bool) {
	if m.LastReviewed == "" {
		return time.Time{}, false
	}
	last, err := ParseDate(m.LastReviewed)
	if err != nil {
		return time.Time{}, false
	}
	days := m.ReviewEvery
	if days <= 0 {
		days = defaultDays
	}
	return last.AddDate(0, 0, days), true
}

// Due reports whether the playbook needs a review on day today.
func (m Meta) Due(today time.Time, defaultDays int) bool {
	next, ok := m.NextReview(defaultDays)
	if !ok {
		return true
	}
	return !day(today).Before(next)
}

// day truncates t to its date in UTC.
func day(t time.Time) time.Time {
	y, mo, d := t.UTC().Date()
	return time.Date(y, mo, d, 0, 0, 0, 0, time.UTC)
}

// setKeys returns the file content with the given frontmatter keys set to
// the given already-encoded YAML values: an existing top-level key (its line
// and any indented continuation lines) is replaced by one line, a missing key
// is added before the closing "---". It fails when a key is not written as
// "key: …" at the start of a line (flow mappings, quoted keys): such a file is
// left for the user to edit.
func (d *Doc) setKeys(kv [][2]string) ([]byte, error) {
	lines := splitLines(d.raw)
	eol := "\n"
	if strings.HasSuffix(lines[0], "\r\n") {
		eol = "\r\n"
	}
	if d.indented {
		return nil, fmt.Errorf("%s:2: cannot update the frontmatter: write each key as \"key: value\" at the start of a line", d.Path)
	}
	drop := map[int]bool{}
	var add []string
	for _, p := range kv {
		line := p[0] + ": " + p[1] + eol
		i, ok := d.keyLines[p[0]]
		if !ok {
			add = append(add, line)
			continue
		}
		if i <= 0 || i >= d.fmEnd || !strings.HasPrefix(lines[i], p[0]+":") {
			return nil, fmt.Errorf("%s:%d: cannot update %q: write it as \"%s: value\" at the start of a line", d.Path, i+1, p[0], p[0])
		}
		lines[i] = line
		for j := i + 1; j < d.fmEnd; j++ {
			l := trimEOL(lines[j])
			if l == "" || l[0] == ' ' || l[0] == '\t' || l[0] == '-' || l[0] == '#' {
				if l != "" && l[0] == '#' {
					break // a comment at column 0 belongs to what follows
				}
				drop[j] = true
				continue
			}
			break
		}
	}
	var out []string
	for i, l := range lines[:d.fmEnd] {
		if !drop[i] {
			out = append(out, l)
		}
	}
	out = append(out, add...)
	out = append(out, lines[d.fmEnd:]...)
	res := []byte(strings.Join(out, ""))
	// Verify: the result parses and each key now sits on the line we wrote.
	d2, err := Parse(d.Path, res)
	if err == nil {
		l2 := splitLines(res)
		for _, p := range kv {
			if i, ok := d2.keyLines[p[0]]; !ok || i >= len(l2) || trimEOL(l2[i]) != p[0]+": "+p[1] {
				err = fmt.Errorf("key %q not where it was written", p[0])
				break
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s:2: cannot update the frontmatter safely (%v); edit it by hand", d.Path, err)
	}
	return res, nil
}

// appendNote adds "- text" at the end of the Notes section (creating the
// section at the end of the file when it is missing).
func appendNote(content []byte, fmEnd int, text string) []byte {
	lines := splitLines(content)
	eol := "\n"
	if len(lines) > 0 && strings.HasSuffix(lines[0], "\r\n") {
		eol = "\r\n"
	}
	if n := len(lines); n > 0 && !strings.HasSuffix(lines[n-1], "\n") {
		lines[n-1] += eol
	}
	item := "- " + text + eol
	hs := headings(lines, fmEnd+1)
	notes := -1
	end := len(lines)
	for i, h := range hs {
		if strings.EqualFold(h.title, "Notes") {
			notes = h.line
			if i+1 < len(hs) {
				end = hs[i+1].line
			}
			break
		}
	}
	if notes < 0 {
		if len(lines) > 0 && trimEOL(lines[len(lines)-1]) != "" {
			lines = append(lines, eol)
		}
		lines = append(lines, "## Notes"+eol, eol, item)
		return []byte(strings.Join(lines, ""))
	}
	// Insert after the section's last non-blank line (or right after the
	// heading and one blank line when the section is empty).
	at := end
	for at > notes+1 && trimEOL(lines[at-1]) == "" {
		at--
	}
	var ins []string
	if at == notes+1 {
		ins = append(ins, eol)
	} else if !strings.HasPrefix(strings.TrimSpace(lines[at-1]), "- ") && !strings.HasPrefix(strings.TrimSpace(lines[at-1]), "* ") {
		ins = append(ins, eol) // keep the list apart from a preceding paragraph
	}
	ins = append(ins, item)
	if at < len(lines) && at == end && end < len(lines) {
		ins = append(ins, eol) // blank line before the next heading
	}
	out := append([]string{}, lines[:at]...)
	out = append(out, ins...)
	out = append(out, lines[at:]...)
	return []byte(strings.Join(out, ""))
}

// quote encodes s as a YAML double-quoted scalar.
func quote(s string) string { return strconv.Quote(s) }

// setRun returns the file content with the run: block replaced by r (or
// added before the closing "---" when there is none). The block's key line
// and its indented continuation lines are replaced; everything else is kept.
func (d *Doc) setRun(r *Run) ([]byte, error) {
	lines := splitLines(d.raw)
	eol := "\n"
	if strings.HasSuffix(lines[0], "\r\n") {
		eol = "\r\n"
	}
	if d.indented {
		return nil, fmt.Errorf("%s:2: cannot update the frontmatter: write each key as \"key: value\" at the start of a line", d.Path)
	}
	block := "run:" + eol + r.yamlBlock(eol)
	var out []string
	if i, ok := d.keyLines["run"]; ok {
		if i <= 0 || i >= d.fmEnd || !strings.HasPrefix(lines[i], "run:") {
			return nil, fmt.Errorf("%s:%d: cannot update run: write it as \"run:\" at the start of a line", d.Path, i+1)
		}
		j := i + 1
		for ; j < d.fmEnd; j++ {
			l := trimEOL(lines[j])
			if l != "" && l[0] != ' ' && l[0] != '\t' && l[0] != '-' {
				break
			}
		}
		// Keep the blank lines that end the block.
		for j > i+1 && trimEOL(lines[j-1]) == "" {
			j--
		}
		out = append(out, lines[:i]...)
		out = append(out, block)
		out = append(out, lines[j:]...)
	} else {
		out = append(out, lines[:d.fmEnd]...)
		out = append(out, block)
		out = append(out, lines[d.fmEnd:]...)
	}
	res := []byte(strings.Join(out, ""))
	d2, err := Parse(d.Path, res)
	if err == nil {
		a, _ := json.Marshal(r)
		b, _ := json.Marshal(d2.Meta.Run)
		if string(a) != string(b) {
			err = fmt.Errorf("the run: block does not read back as written")
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s:2: cannot update the run: block safely (%v); edit it by hand", d.Path, err)
	}
	return res, nil
}
