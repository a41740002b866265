package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// LoadEffective merges the built-in default policy (defaultSrc, named
// defaultName in messages) with the instance's policy file, opened beneath
// root (the instance's safe-open layer: a link or special file there is
// refused). A missing instance file adds nothing; an invalid one is an
// error with file:line.
func LoadEffective(root safefile.Root, defaultName string, defaultSrc []byte, instancePath string) (*Policy, error) {
	def, err := Parse(defaultName, defaultSrc)
	if err != nil {
		return nil, err
	}
	data, err := root.ReadFile(instancePath, instance.MaxTextFile)
	if errors.Is(err, fs.ErrNotExist) {
		return Merge(def), nil
	}
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "read policy")
	}
	inst, err := Parse(instancePath, data)
	if err != nil {
		return nil, err
	}
	return Merge(def, inst), nil
}

// PolicyFile is the instance's policy file as hobbs policy allow, deny and rm
// edit it. Each change is recorded in Audit: policy.allow, policy.deny or
// policy.rm, with the canonical pattern as subject and the file as detail;
// an entry already there (or a refusal of a bad one) changes nothing and
// records nothing but the refusal.
type PolicyFile struct {
	Root     safefile.Root // the instance's safe-open layer
	Path     string        // policy.yaml
	LockPath string        // the lock serialising its writers (its directory is created)
	Name     string        // the file as the audit log names it ("policy.yaml")
	Template []byte        // what a missing file starts from
	Audit    *audit.Logger // nil: no audit entries
}

// Allow adds entry to the domains list; see Edit.
func (f PolicyFile) Allow(entry string) (string, bool, error) {
	return f.add("allow", "domains", entry)
}

// Trust adds entry to the trusted list; see Edit.
func (f PolicyFile) Trust(entry string) (string, bool, error) {
	return f.add("trust", "trusted", entry)
}

// Deny adds entry to the deny list; see Edit.
func (f PolicyFile) Deny(entry string) (string, bool, error) { return f.add("deny", "deny", entry) }

func (f PolicyFile) add(verb, section, entry string) (string, bool, error) {
	pattern, changed, err := "", false, f.Root.MkdirAll(filepath.Dir(f.LockPath), 0o700)
	if err == nil {
		pattern, changed, err = Edit(f.Root, f.Path, f.LockPath, section, entry, f.Template)
	}
	if changed || err != nil {
		f.record("policy."+verb, pattern, entry, nil, err)
	}
	return pattern, changed, err
}

// Remove takes entry out of the domains and deny lists; see Unlist.
func (f PolicyFile) Remove(entry string) (string, []string, error) {
	pattern, sections, err := "", []string(nil), f.Root.MkdirAll(filepath.Dir(f.LockPath), 0o700)
	if err == nil {
		pattern, sections, err = Unlist(f.Root, f.Path, f.LockPath, entry)
	}
	var detail map[string]any
	if err == nil {
		detail = map[string]any{"sections": sections}
	}
	f.record("policy.rm", pattern, entry, detail, err)
	return pattern, sections, err
}

func (f PolicyFile) record(event, pattern, entry string, detail map[string]any, err error) {
	if pattern == "" {
		pattern = entry
	}
	d := map[string]any{"file": f.Name}
	maps.Copy(d, detail)
	f.Audit.Record(audit.Entry{Event: event, Subject: pattern, Detail: d}, err)
}

// Edit adds entry to section ("domains" or "deny") of the policy file at
// path, keeping its comments and layout (a yaml.v3 node round trip), under
// lockPath, replacing the file atomically. Both paths are opened beneath
// fsys (the instance's safe-open layer), never through a link. A missing file starts from
// template. The file is validated before and after; an invalid file is
// reported and never rewritten. It returns the canonical pattern and whether
// the file changed (false when the entry was already there).
func Edit(fsys safefile.Root, path, lockPath, section, entry string, template []byte) (string, bool, error) {
	if section != "domains" && section != "deny" && section != "trusted" {
		return "", false, fmt.Errorf("egress: cannot edit section %q", section)
	}
	rule, err := ParseRule(entry)
	if err != nil {
		return "", false, errs.Usagef("%v", err)
	}
	unlock, err := fsys.Lock(lockPath, 10*time.Second)
	if err != nil {
		return "", false, errs.Wrap(errs.Timeout, err, "policy is locked")
	}
	defer unlock()
	data, err := fsys.ReadFile(path, instance.MaxTextFile)
	perm := fs.FileMode(0o644)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		data = template
	case err != nil:
		return "", false, errs.Wrap(errs.Failure, err, "read policy")
	default:
		if fi, err := fsys.Stat(path); err == nil {
			perm = fi.Mode().Perm()
		}
	}
	cur, err := Parse(path, data)
	if err != nil {
		return "", false, err
	}
	for _, r := range append(append(append([]*Rule{}, cur.Domains...), cur.Deny...), cur.Trusted...) {
		if r.Pattern != rule.Pattern {
			continue
		}
		if r.section == section {
			return rule.Pattern, false, nil
		}
		if section == "domains" && r.section == "deny" {
			return "", false, errs.Usagef("%s is listed under deny at %s; deny wins", rule.Pattern, r.Source).
				Advise(DenyWins, "path", path)
		}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return "", false, errs.Usagef("%s: %v", path, err)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		// Empty or comment-only document: start a mapping, keep the comments.
		m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		if len(doc.Content) == 0 {
			doc = yaml.Node{Kind: yaml.DocumentNode, HeadComment: doc.HeadComment, Content: []*yaml.Node{m}}
		} else {
			m.HeadComment = doc.Content[0].HeadComment
			doc.Content[0] = m
		}
	}
	root := doc.Content[0]
	var seq *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == section {
			v := root.Content[i+1]
			if v.Kind != yaml.SequenceNode { // null
				*v = yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", LineComment: v.LineComment}
			}
			seq = v
		}
	}
	if seq == nil {
		seq = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: section}, seq)
	}
	if len(seq.Content) == 0 {
		seq.Style &^= yaml.FlowStyle // "[]" becomes a block list; a written flow list keeps its style
	}
	item := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: rule.Pattern}
	if rule.Wildcard {
		item.Style = yaml.DoubleQuotedStyle
	}
	seq.Content = append(seq.Content, item)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return "", false, err
	}
	enc.Close()
	if _, err := Parse(path, buf.Bytes()); err != nil {
		return "", false, fmt.Errorf("egress: edited policy does not parse (not written): %w", err)
	}
	if err := fsys.Write(path, buf.Bytes(), perm); err != nil {
		return "", false, errs.Wrap(errs.Failure, err, "write policy")
	}
	return rule.Pattern, true, nil
}

// Unlist removes entry from the domains, deny and trusted lists of the policy file at
// path, under lockPath, keeping the file's comments and layout, replacing it
// atomically; both paths are opened beneath fsys. The file is validated
// before and after; an invalid file is reported and never rewritten. It
// returns the canonical pattern and the sections it was removed from; an
// entry the file does not list is a Missing error.
func Unlist(fsys safefile.Root, path, lockPath, entry string) (string, []string, error) {
	rule, err := ParseRule(entry)
	if err != nil {
		return "", nil, errs.Usagef("%v", err)
	}
	unlock, err := fsys.Lock(lockPath, 10*time.Second)
	if err != nil {
		return "", nil, errs.Wrap(errs.Timeout, err, "policy is locked")
	}
	defer unlock()
	data, err := fsys.ReadFile(path, instance.MaxTextFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil, errs.Missingf("%s is not listed in %s (there is no such file)", rule.Pattern, path)
	}
	if err != nil {
		return "", nil, errs.Wrap(errs.Failure, err, "read policy")
	}
	perm := fs.FileMode(0o644)
	if fi, err := fsys.Stat(path); err == nil {
		perm = fi.Mode().Perm()
	}
	if _, err := Parse(path, data); err != nil {
		return "", nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return "", nil, errs.Usagef("%s: %v", path, err)
	}
	var removed []string
	if len(doc.Content) > 0 && doc.Content[0].Kind == yaml.MappingNode {
		root := doc.Content[0]
		for i := 0; i+1 < len(root.Content); i += 2 {
			section, seq := root.Content[i].Value, root.Content[i+1]
			if (section != "domains" && section != "deny" && section != "trusted") || seq.Kind != yaml.SequenceNode {
				continue
			}
			kept := seq.Content[:0]
			for _, item := range seq.Content {
				if r, err := ParseRule(item.Value); err == nil && item.Kind == yaml.ScalarNode && r.Pattern == rule.Pattern {
					removed = append(removed, section)
					continue
				}
				kept = append(kept, item)
			}
			seq.Content = kept
		}
	}
	if len(removed) == 0 {
		return "", nil, errs.Missingf("%s is not listed in %s", rule.Pattern, path).
			Advise(NotListed, "pattern", rule.Pattern)
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return "", nil, err
	}
	enc.Close()
	if _, err := Parse(path, buf.Bytes()); err != nil {
		return "", nil, fmt.Errorf("egress: edited policy does not parse (not written): %w", err)
	}
	if err := fsys.Write(path, buf.Bytes(), perm); err != nil {
		return "", nil, errs.Wrap(errs.Failure, err, "write policy")
	}
	return rule.Pattern, removed, nil
}
