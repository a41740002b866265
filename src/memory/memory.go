package memory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/hobbs-agent/hobbs/src/frontmatter"
)

// Status values.
const (
	StatusActive     = "active"
	StatusArchived   = "archived"
	StatusSuperseded = "superseded"
)

// Tier is where a memory file lives.
type Tier string

const (
	Active  Tier = "active"
	Archive Tier = "archive"
)

// Memory is one parsed memory file.
type Memory struct {
	ID           string    `json:"id"`
	Type         string    `json:"type,omitempty"`
	Tags         []string  `json:"tags"`
	Created      time.Time `json:"created"`
	Updated      time.Time `json:"updated,omitempty"`
	LastAccessed time.Time `json:"last_accessed,omitempty"`
	Reinforced   int       `json:"reinforced"`
	Source       string    `json:"source,omitempty"`
	Sources      []string  `json:"sources,omitempty"`
	Supersedes   []string  `json:"supersedes,omitempty"`
	SupersededBy string    `json:"superseded_by,omitempty"`
	Status       string    `json:"status"`
	Body         string    `json:"text"`

	Tier Tier   `json:"tier"`
	Path string `json:"path"` // absolute

	node *yaml.Node // the frontmatter mapping, edited in place on rewrite
	raw  []byte     // the file as read
}

// Raw returns the file content m was read from (nil for a new memory).
func (m *Memory) Raw() []byte { return m.raw }

// MarshalJSON writes unset times as null and no tags as [] (as Entry does).
func (m *Memory) MarshalJSON() ([]byte, error) {
	type plain Memory
	tags := m.Tags
	if tags == nil {
		tags = []string{}
	}
	return json.Marshal(struct {
		*plain
		Tags         []string   `json:"tags"`
		Updated      *time.Time `json:"updated"`
		LastAccessed *time.Time `json:"last_accessed"`
	}{(*plain)(m), tags, optTime(m.Updated), optTime(m.LastAccessed)})
}

func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// Problem is one thing wrong with a file, located by line (1-based; 0 when
// it concerns the whole file).
type Problem = frontmatter.Problem

// ParseError is returned by Parse for a file it cannot use.
type ParseError struct {
	Line   int
	Reason string
}

func (e *ParseError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, e.Reason)
	}
	return e.Reason
}

var idRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$`)

// ValidID reports whether id is acceptable as a memory id.
func ValidID(id string) bool { return idRe.MatchString(id) }

// Parse reads a memory file's content. tier supplies the status of a file that
// does not state one.
func Parse(data []byte, tier Tier) (*Memory, error) {
	fm, body, fmLine, err := split(data)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(fm, &doc); err != nil {
		return nil, yamlErr(err, fmLine)
	}
	if len(doc.Content) == 0 {
		return nil, &ParseError{Line: 1, Reason: "empty frontmatter: missing id"}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, &ParseError{Line: root.Line + fmLine, Reason: "frontmatter is not a mapping of keys"}
	}
	m := &Memory{Body: string(body), Tier: tier, node: root}
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		line := v.Line + fmLine
		if seen[k.Value] {
			return nil, &ParseError{Line: k.Line + fmLine, Reason: fmt.Sprintf("duplicate key %q", k.Value)}
		}
		seen[k.Value] = true
		bad := func(format string, args ...any) error {
			return &ParseError{Line: line, Reason: k.Value + ": " + fmt.Sprintf(format, args...)}
		}
		var err error
		switch k.Value {
		case "id":
			m.ID, err = scalar(v, bad)
			if err == nil && !ValidID(m.ID) {
				err = bad("invalid id %q (letters, digits, _ . : -)", m.ID)
			}
		case "type":
			m.Type, err = scalar(v, bad)
		case "tags":
			m.Tags, err = stringList(v, bad)
		case "created":
			m.Created, err = timeValue(v, bad)
		case "updated":
			m.Updated, err = timeValue(v, bad)
		case "last_accessed":
			m.LastAccessed, err = timeValue(v, bad)
		case "reinforced":
			var s string
			if s, err = scalar(v, bad); err == nil && s != "" {
				n, perr := strconv.Atoi(s)
				if perr != nil || n < 0 {
					err = bad("want a whole number >= 0, got %q", s)
				}
				m.Reinforced = n
			}
		case "source":
			m.Source, err = scalar(v, bad)
		case "sources":
			m.Sources, err = stringList(v, bad)
		case "supersedes":
			m.Supersedes, err = stringList(v, bad)
		case "superseded_by":
			m.SupersededBy, err = scalar(v, bad)
		case "status":
			m.Status, err = scalar(v, bad)
			if err == nil && m.Status != "" && m.Status != StatusActive && m.Status != StatusArchived && m.Status != StatusSuperseded {
				err = bad("unknown status %q (active, archived or superseded)", m.Status)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	if m.ID == "" {
		return nil, &ParseError{Line: 1, Reason: "missing id"}
	}
	if m.Status == "" {
		m.Status = StatusActive
		if tier == Archive {
			m.Status = StatusArchived
		}
	}
	return m, nil
}

// split separates the frontmatter from the body (frontmatter.Block); the
// blank lines between them are not part of the body. fmLine is the file line
// number just before the frontmatter's first line.
func split(data []byte) (fm, body []byte, fmLine int, err error) {
	fm, body, _, err = frontmatter.Block(data)
	if err != nil {
		pe := err.(*frontmatter.ParseError)
		return nil, nil, 0, &ParseError{Line: pe.Line, Reason: pe.Reason}
	}
	return fm, bytes.TrimLeft(body, "\r\n"), 1, nil
}

func yamlErr(err error, fmLine int) error {
	line, msg := frontmatter.YAMLLine(err)
	if line == 0 {
		return &ParseError{Line: 1, Reason: "bad YAML: " + msg}
	}
	return &ParseError{Line: line + fmLine, Reason: "bad YAML: " + msg}
}

func scalar(v *yaml.Node, bad func(string, ...any) error) (string, error) {
	if v.Kind == yaml.AliasNode {
		return "", bad("aliases are not supported")
	}
	if v.Kind != yaml.ScalarNode {
		return "", bad("want a single value")
	}
	if v.Tag == "!!null" {
		return "", nil
	}
	return strings.TrimSpace(v.Value), nil
}

// stringList accepts a sequence of scalars, a single scalar, a comma list in
// one scalar, or null.
func stringList(v *yaml.Node, bad func(string, ...any) error) ([]string, error) {
	switch v.Kind {
	case yaml.ScalarNode:
		if v.Tag == "!!null" || strings.TrimSpace(v.Value) == "" {
			return nil, nil
		}
		var out []string
		for _, s := range strings.Split(v.Value, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		return out, nil
	case yaml.SequenceNode:
		var out []string
		for _, c := range v.Content {
			if c.Kind != yaml.ScalarNode {
				return nil, bad("want a list of plain values")
			}
			if s := strings.TrimSpace(c.Value); s != "" && c.Tag != "!!null" {
				out = append(out, s)
			}
		}
		return out, nil
	}
	return nil, bad("want a list")
}

var timeLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02T15:04",
	"2006-01-02 15:04", "2006-01-02"}

func timeValue(v *yaml.Node, bad func(string, ...any) error) (time.Time, error) {
	s, err := scalar(v, bad)
	if err != nil || s == "" {
		return time.Time{}, err
	}
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, bad("want a date (2026-01-22) or time (2026-01-22T09:30:00Z), got %q", s)
}

// Marshal renders m as file content: its frontmatter node tree with the
// fields set, then the body.
func (m *Memory) Marshal() ([]byte, error) {
	if m.node == nil {
		m.node = &yaml.Node{Kind: yaml.MappingNode}
	}
	n := m.node
	setScalar(n, "id", m.ID)
	if m.Type != "" || has(n, "type") {
		setScalar(n, "type", m.Type)
	}
	setList(n, "tags", m.Tags)
	setTime(n, "created", m.Created)
	if !m.Updated.IsZero() || has(n, "updated") {
		setTime(n, "updated", m.Updated)
	}
	setTime(n, "last_accessed", m.LastAccessed)
	setScalar(n, "reinforced", strconv.Itoa(m.Reinforced))
	if m.Source == "" {
		setNull(n, "source")
	} else {
		setScalar(n, "source", m.Source)
	}
	if len(m.Sources) > 0 || has(n, "sources") {
		setList(n, "sources", m.Sources)
	}
	switch {
	case len(m.Supersedes) == 0:
		setNull(n, "supersedes")
	case len(m.Supersedes) == 1:
		setScalar(n, "supersedes", m.Supersedes[0])
	default:
		setList(n, "supersedes", m.Supersedes)
	}
	if m.SupersededBy != "" || has(n, "superseded_by") {
		setScalar(n, "superseded_by", m.SupersededBy)
	}
	setScalar(n, "status", m.Status)
	var buf bytes.Buffer
	buf.WriteString("---\n")
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return nil, err
	}
	enc.Close()
	buf.WriteString("---\n\n")
	body := strings.TrimLeft(m.Body, "\r\n")
	buf.WriteString(body)
	if body != "" && !strings.HasSuffix(body, "\n") {
		buf.WriteByte('\n')
	}
	return buf.Bytes(), nil
}

func has(n *yaml.Node, key string) bool { return find(n, key) != nil }

func find(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// set replaces the value node of key (keeping its comments) or appends it.
func set(n *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			old := n.Content[i+1]
			v.LineComment, v.HeadComment, v.FootComment = old.LineComment, old.HeadComment, old.FootComment
			n.Content[i+1] = v
			return
		}
	}
	k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}
	// Insert after the last key that comes before it in the usual order.
	at := len(n.Content)
	if rank, ok := keyRank[key]; ok {
		at = -1
		for i := 0; i+1 < len(n.Content); i += 2 {
			if r, known := keyRank[n.Content[i].Value]; known && r < rank {
				at = i + 2
			}
		}
		if at < 0 {
			at = 0
		}
	}
	n.Content = append(n.Content[:at], append([]*yaml.Node{k, v}, n.Content[at:]...)...)
}

var keyRank = map[string]int{"id": 0, "type": 1, "tags": 2, "created": 3, "updated": 4, "last_accessed": 5,
	"reinforced": 6, "source": 7, "sources": 8, "supersedes": 9, "superseded_by": 10, "status": 11}

func setScalar(n *yaml.Node, key, val string) {
	if old := find(n, key); old != nil && old.Kind == yaml.ScalarNode && old.Tag != "!!null" && strings.TrimSpace(old.Value) == val {
		return // unchanged: keep the author's spelling and style
	}
	tag := "!!str"
	if _, err := strconv.Atoi(val); err == nil && key == "reinforced" {
		tag = "!!int"
	}
	set(n, key, &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: val})
}

func setNull(n *yaml.Node, key string) {
	if old := find(n, key); old != nil && old.Kind == yaml.ScalarNode && (old.Tag == "!!null" || old.Value == "") {
		return
	}
	set(n, key, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"})
}

func setList(n *yaml.Node, key string, vals []string) {
	if old := find(n, key); old != nil {
		if cur, err := stringList(old, func(string, ...any) error { return errors.New("x") }); err == nil && equalStrings(cur, vals) {
			return
		}
	}
	seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: yaml.FlowStyle}
	for _, v := range vals {
		seq.Content = append(seq.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v})
	}
	set(n, key, seq)
}

func setTime(n *yaml.Node, key string, t time.Time) {
	if t.IsZero() {
		setNull(n, key)
		return
	}
	if old := find(n, key); old != nil {
		if cur, err := timeValue(old, func(string, ...any) error { return errors.New("x") }); err == nil && cur.Equal(t) {
			return
		}
	}
	set(n, key, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!timestamp", Value: FormatTime(t)})
}

// FormatTime is how this package writes times.
func FormatTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// HasTag reports whether m carries tag (case-insensitive).
func (m *Memory) HasTag(tag string) bool { return hasTag(m.Tags, tag) }

func hasTag(tags []string, tag string) bool {
	for _, t := range tags {
		if strings.EqualFold(t, tag) {
			return true
		}
	}
	return false
}

// Summary is the first line of the body, cut to n characters.
func (m *Memory) Summary(n int) string { return summary(m.Body, n) }

func summary(body string, n int) string {
	s := strings.TrimSpace(body)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i]) + " …"
	}
	r := []rune(s)
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// clone returns a deep copy of m (its node tree included) for before/after
// comparisons.
func (m *Memory) clone() *Memory {
	c := *m
	c.Tags = append([]string(nil), m.Tags...)
	c.Sources = append([]string(nil), m.Sources...)
	c.Supersedes = append([]string(nil), m.Supersedes...)
	c.node = nil
	return &c
}
