package config

import (
	"bytes"
	"errors"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// Reading and changing one key of config.yaml (hobbs config get, set).
//
// Set edits the file as text where the key's value is: the value's bytes
// on its line are replaced, a missing key is added under its mapping (or
// at the end of the file), and everything else — comments, blank lines,
// alignment — stays as it was. yaml.v3 locates the value (its node's line
// and column) but does not write the file: its encoder drops blank lines.
// Only where the text cannot be spliced (a value written over several
// lines) is the file encoded again from its nodes, which keeps the
// comments. The result must pass Parse, as hobbs run reads it, before it
// is written (atomic, under the config lock); a file whose YAML does not
// parse is reported and never rewritten.

// Get is the effective value of key (dotted: resources.memory) in c: a
// scalar as it is, a mapping or list in YAML flow style.
func (c *Config) Get(key string) (string, error) {
	var doc yaml.Node
	if err := doc.Encode(c); err != nil {
		return "", errs.Wrap(errs.Failure, err, "encode the configuration")
	}
	n := lookup(&doc, strings.Split(key, "."))
	if n == nil {
		return "", unknownKey(key, dottedKeys(&doc, ""))
	}
	return nodeText(n), nil
}

func unknownKey(key string, known []string) error {
	var same []string // keys as deep as key
	for _, k := range known {
		if strings.Count(k, ".") == strings.Count(key, ".") {
			same = append(same, k)
		}
	}
	return errs.Usagef("config.yaml has no key %q", key).Advise(UnknownKey, "key", key, "suggest", errs.Closest(key, same))
}

// lookup follows path from n (a document or mapping node) through
// mappings; nil when a step is missing.
func lookup(n *yaml.Node, path []string) *yaml.Node {
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil
		}
		n = n.Content[0]
	}
	for _, p := range path {
		if n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == p {
				next = n.Content[i+1]
			}
		}
		if next == nil {
			return nil
		}
		n = next
	}
	return n
}

// dottedKeys are the dotted names of every key under n.
func dottedKeys(n *yaml.Node, prefix string) []string {
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	var out []string
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := prefix + n.Content[i].Value
		out = append(out, k)
		out = append(out, dottedKeys(n.Content[i+1], k+".")...)
	}
	sort.Strings(out)
	return out
}

// nodeText is n as get prints it.
func nodeText(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return n.Value
	}
	c := *n
	setFlow(&c)
	b, err := yaml.Marshal(&c)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func setFlow(n *yaml.Node) {
	if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
		n.Style |= yaml.FlowStyle
	}
}

// Change is what Set did.
type Change struct {
	Path  string `json:"path"`
	Key   string `json:"key"`
	Old   string `json:"old"` // "" when the file did not set it
	New   string `json:"new"`
	Added bool   `json:"added,omitempty"` // the key was not in the file
}

// Set sets key to value (YAML: 8g, 512, true, "quoted", [a, b]) in the
// config.yaml at path (beneath root; lockPath serialises writers). The
// file as changed must be valid (Parse) or nothing is written; a file
// whose YAML does not parse is reported, never rewritten. A missing file
// is started empty.
func Set(root safefile.Root, path, lockPath, key, value string) (Change, error) {
	ch := Change{Path: path, Key: key}
	parts := strings.Split(key, ".")
	for _, p := range parts {
		if p == "" {
			return ch, errs.Usagef("%q is not a key: keys are names joined by dots (resources.memory)", key)
		}
	}
	var val yaml.Node
	if err := yaml.Unmarshal([]byte(value), &val); err != nil || len(val.Content) != 1 {
		return ch, errs.Usagef("%q is not one YAML value (quote a string that holds ': ' or '#')", value)
	}
	nv := val.Content[0]
	nv.HeadComment, nv.LineComment, nv.FootComment = "", "", ""
	setFlow(nv)
	ch.New = nodeText(nv)

	if err := root.MkdirAll(filepath.Dir(lockPath), 0o755); err != nil {
		return ch, errs.Wrap(errs.Failure, err, "create lock directory")
	}
	unlock, err := root.Lock(lockPath, 30*time.Second)
	if err != nil {
		if errors.Is(err, safefile.ErrLockTimeout) {
			return ch, errs.Wrap(errs.Timeout, err, "config.yaml is busy")
		}
		return ch, errs.Wrap(errs.Failure, err, "lock config.yaml")
	}
	defer unlock()
	data, err := root.ReadFile(path, instance.MaxTextFile)
	perm := fs.FileMode(0o644)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		data = nil
	case err != nil:
		return ch, errs.Wrap(errs.Failure, err, "read config")
	default:
		if fi, err := root.Stat(path); err == nil {
			perm = fi.Mode().Perm()
		}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return ch, yamlError(path, syntaxError(data, err), nil) // reported, never rewritten
	}
	out, old, added, err := setText(data, &doc, parts, nv)
	if err != nil {
		return ch, err
	}
	ch.Old, ch.Added = old, added
	if _, err := Parse(path, out); err != nil {
		return ch, err
	}
	if err := root.Write(path, out, perm); err != nil {
		return ch, errs.Wrap(errs.Failure, err, "write config")
	}
	return ch, nil
}

// setText is data (doc its nodes) with the value at path set to nv, the
// value it had ("" when none), and whether the key was added.
func setText(data []byte, doc *yaml.Node, path []string, nv *yaml.Node) ([]byte, string, bool, error) {
	if len(doc.Content) == 0 {
		doc.Kind = yaml.DocumentNode
		doc.Content = []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}
	}
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode {
		return nil, "", false, errs.Usagef("config.yaml is not a mapping of keys").Advise(Invalid)
	}
	// The deepest mapping of path that is in the file, and the rest.
	parent, i := top, 0
	for ; i < len(path)-1; i++ {
		next := lookup(parent, path[i:i+1])
		if next == nil {
			break
		}
		if next.Kind != yaml.MappingNode {
			return nil, "", false, errs.Usagef("%s is not a mapping of keys", strings.Join(path[:i+1], ".")).Advise(Invalid)
		}
		parent = next
	}
	if i == len(path)-1 {
		if old := lookup(parent, path[i:]); old != nil {
			if out, ok := replaceValue(data, old, nv); ok {
				return out, nodeText(old), false, nil
			}
			text := nodeText(old)
			*old = keepComments(*nv, old)
			return reencode(doc), text, false, nil
		}
	}
	// Add path[i:] under parent.
	add := nestedValue(path[i+1:], nv)
	key := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: path[i]}
	if parent.Style&yaml.FlowStyle != 0 && parent.Line == lastLine(parent) {
		if out, ok := replaceFlow(data, parent, key, add); ok {
			return out, "", true, nil
		}
	}
	if out, ok := appendBlock(data, top, parent, key, add); ok {
		return out, "", true, nil
	}
	parent.Content = append(parent.Content, key, add)
	parent.Style &^= yaml.FlowStyle
	return reencode(doc), "", true, nil
}

// nestedValue is nv under the mapping keys rest (none: nv itself).
func nestedValue(rest []string, nv *yaml.Node) *yaml.Node {
	if len(rest) == 0 {
		return nv
	}
	return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{
		{Kind: yaml.ScalarNode, Tag: "!!str", Value: rest[0]}, nestedValue(rest[1:], nv)}}
}

// keepComments is nv with old's comments.
func keepComments(nv yaml.Node, old *yaml.Node) yaml.Node {
	nv.HeadComment, nv.LineComment, nv.FootComment = old.HeadComment, old.LineComment, old.FootComment
	return nv
}

func reencode(doc *yaml.Node) []byte {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	_ = enc.Encode(doc)
	return b.Bytes()
}

// lines splits data after each newline.
func lines(data []byte) []string { return strings.SplitAfter(string(data), "\n") }

// lineStart is the byte offset of 1-based line n in data.
func lineStart(data []byte, n int) int {
	off := 0
	for i, l := range lines(data) {
		if i == n-1 {
			return off
		}
		off += len(l)
	}
	return len(data)
}

// tokenEnd is the length of the one-line token starting at s: a quoted
// scalar, a flow collection, or a plain scalar whose text is plain.
func tokenEnd(s string, plain string) (int, bool) {
	switch {
	case strings.HasPrefix(s, `"`):
		for i := 1; i < len(s); i++ {
			switch s[i] {
			case '\\':
				i++
			case '"':
				return i + 1, true
			case '\n':
				return 0, false
			}
		}
	case strings.HasPrefix(s, "'"):
		for i := 1; i < len(s); i++ {
			if s[i] == '\'' {
				if i+1 < len(s) && s[i+1] == '\'' {
					i++
					continue
				}
				return i + 1, true
			}
			if s[i] == '\n' {
				return 0, false
			}
		}
	case strings.HasPrefix(s, "{") || strings.HasPrefix(s, "["):
		depth, quote := 0, byte(0)
		for i := 0; i < len(s); i++ {
			c := s[i]
			switch {
			case c == '\n':
				return 0, false
			case quote != 0:
				if c == quote {
					quote = 0
				}
			case c == '"' || c == '\'':
				quote = c
			case c == '{' || c == '[':
				depth++
			case c == '}' || c == ']':
				if depth--; depth == 0 {
					return i + 1, true
				}
			}
		}
	case strings.HasPrefix(s, plain) && plain != "":
		return len(plain), true
	}
	return 0, false
}

// valueText is nv as YAML on one line.
func valueText(nv *yaml.Node) (string, bool) {
	b, err := yaml.Marshal(nv)
	t := strings.TrimSuffix(string(b), "\n")
	return t, err == nil && !strings.Contains(t, "\n")
}

// replaceValue splices nv's text where old's one-line value is.
func replaceValue(data []byte, old, nv *yaml.Node) ([]byte, bool) {
	if old.Line == 0 || lastLine(old) != old.Line {
		return nil, false
	}
	if old.Kind == yaml.ScalarNode && (old.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0) {
		return nil, false
	}
	start := lineStart(data, old.Line) + old.Column - 1
	if start > len(data) {
		return nil, false
	}
	plain := ""
	if old.Kind == yaml.ScalarNode && old.Style == 0 {
		plain = old.Value
	}
	n, ok := tokenEnd(string(data[start:]), plain)
	if !ok {
		return nil, false
	}
	c := *nv
	if c.Kind == yaml.ScalarNode && c.Tag == "!!str" && old.Style&yaml.DoubleQuotedStyle != 0 && c.Style == 0 {
		c.Style = yaml.DoubleQuotedStyle // a value written quoted stays quoted
	}
	text, ok := valueText(&c)
	if !ok {
		return nil, false
	}
	out := append(append(append([]byte{}, data[:start]...), text...), data[start+n:]...)
	return out, true
}

// replaceFlow adds key: value to the one-line flow mapping parent,
// rewriting that mapping's text in flow style.
func replaceFlow(data []byte, parent, key, value *yaml.Node) ([]byte, bool) {
	m := *parent
	m.Content = append(append([]*yaml.Node{}, parent.Content...), key, value)
	m.HeadComment, m.LineComment, m.FootComment = "", "", ""
	return replaceValue(data, parent, &m)
}

// appendBlock adds key: value as a block line under parent (top: at the
// end of the file; else after parent's last line, indented as its keys).
func appendBlock(data []byte, top, parent, key, value *yaml.Node) ([]byte, bool) {
	indent := 0
	at := len(data)
	if parent != top {
		if len(parent.Content) == 0 || parent.Style&yaml.FlowStyle != 0 {
			return nil, false
		}
		indent = parent.Content[0].Column - 1
		at = lineStart(data, lastLine(parent)+1)
	}
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{key, value}}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(m); err != nil {
		return nil, false
	}
	var block strings.Builder
	for _, l := range strings.SplitAfter(b.String(), "\n") {
		if l != "" {
			block.WriteString(strings.Repeat(" ", indent) + l)
		}
	}
	head := append([]byte{}, data[:at]...)
	if len(head) > 0 && head[len(head)-1] != '\n' {
		head = append(head, '\n')
	}
	return append(append(head, block.String()...), data[at:]...), true
}

// lastLine is the last line a node of n's tree starts on.
func lastLine(n *yaml.Node) int {
	l := n.Line
	for _, c := range n.Content {
		l = max(l, lastLine(c))
	}
	return l
}
