package config

import (
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/hobbs-agent/hobbs/src/errs"
)

// Key is one setting of config.yaml as templates/config.yaml documents it:
// its dotted name, its default as the template writes it, and the
// template's comment on it.
type Key struct {
	Name    string `json:"key"`
	Default string `json:"default"`
	Doc     string `json:"doc"`
}

// Summary is the first sentence of k's comment.
func (k Key) Summary() string {
	if i := strings.Index(k.Doc, ". "); i >= 0 {
		return k.Doc[:i+1]
	}
	return k.Doc
}

// Keys lists the settings template (templates/config.yaml) documents, in
// its order: every key whose value is a scalar or a mapping written in
// flow style ({}), with the comment above it or on its line. A block
// mapping (resources:) is not a setting of its own: its keys are.
func Keys(template []byte) ([]Key, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(template, &doc); err != nil {
		return nil, errs.Wrap(errs.Failure, err, "read the config template")
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errs.Failf("the config template holds no keys")
	}
	var out []Key
	var walk func(m *yaml.Node, prefix string)
	walk = func(m *yaml.Node, prefix string) {
		for i := 0; i+1 < len(m.Content); i += 2 {
			k, v := m.Content[i], m.Content[i+1]
			if v.Kind == yaml.MappingNode && v.Style&yaml.FlowStyle == 0 {
				walk(v, prefix+k.Value+".")
				continue
			}
			def := v.Value
			if v.Kind != yaml.ScalarNode {
				b, _ := yaml.Marshal(v)
				def = strings.TrimSpace(string(b))
			}
			comment := k.HeadComment
			if comment == "" {
				comment = v.LineComment
			}
			out = append(out, Key{Name: prefix + k.Value, Default: def, Doc: commentText(comment)})
		}
	}
	walk(doc.Content[0], "")
	return out, nil
}

// commentText is a YAML comment as one line of prose: its lines without
// "#", joined; an example block under "Example:" or indented more is left
// out.
func commentText(c string) string {
	var words []string
	for _, l := range strings.Split(c, "\n") {
		l = strings.TrimPrefix(strings.TrimSpace(l), "#")
		if strings.HasPrefix(l, "   ") || strings.TrimSpace(l) == "Example:" {
			continue
		}
		words = append(words, strings.Fields(l)...)
	}
	return strings.Join(words, " ")
}

// childKeys are the keys config.yaml takes under the mapping at path
// (dotted key names; under env: and secrets:, any name), from Config's
// yaml tags; nil when path names no mapping of Config.
func childKeys(path []string) []string {
	t := reflect.TypeOf(Config{})
	for _, p := range path {
		if t.Kind() == reflect.Map {
			t = t.Elem()
			continue
		}
		f, ok := fieldByKey(t, p)
		if !ok {
			return nil
		}
		t = f.Type
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	for i := 0; i < t.NumField(); i++ {
		if n := yamlName(t.Field(i)); n != "-" { // not a key of the file
			out = append(out, n)
		}
	}
	return out
}

func fieldByKey(t reflect.Type, key string) (reflect.StructField, bool) {
	if t.Kind() != reflect.Struct {
		return reflect.StructField{}, false
	}
	for i := 0; i < t.NumField(); i++ {
		if yamlName(t.Field(i)) == key {
			return t.Field(i), true
		}
	}
	return reflect.StructField{}, false
}

func yamlName(f reflect.StructField) string { return strings.Split(f.Tag.Get("yaml"), ",")[0] }

// keyPath is the path of the mapping that holds the key name written at
// line of root (a document's mapping), nil when there is none.
func keyPath(root *yaml.Node, line int, name string) ([]string, bool) {
	if root == nil || root.Kind != yaml.MappingNode {
		return nil, false
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Line == line && k.Value == name {
			return []string{}, true
		}
		if p, ok := keyPath(v, line, name); ok {
			return append([]string{k.Value}, p...), true
		}
	}
	return nil, false
}

// suggestKey is the known key nearest to name, the unknown key written at
// line of root: among the keys of the mapping that holds it; "" when none
// is close.
func suggestKey(root *yaml.Node, line int, name string) string {
	path, ok := keyPath(root, line, name)
	if !ok {
		return ""
	}
	return errs.Closest(name, childKeys(path))
}
