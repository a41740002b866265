package policy

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

// Narrow returns the policy file of a run that may reach only domains
// (policy domains entries, each already within what p allows) and Claude's
// own service: p's deny entries, allow_private ranges and request rules
// still apply, and nothing else p allows does. header is the file's first
// comment line. The result parses (Parse) to a policy no wider than p's
// deny entries let it be.
func (p *Policy) Narrow(header string, domains []string) ([]byte, error) {
	doc := struct {
		Services     []string            `yaml:"services"`
		Domains      []string            `yaml:"domains"`
		Deny         []string            `yaml:"deny"`
		AllowPrivate []string            `yaml:"allow_private"`
		Rules        map[string][]string `yaml:"rules,omitempty"`
	}{Services: []string{"claude"}, Domains: append([]string{}, domains...), Deny: []string{}, AllowPrivate: []string{}}
	for _, r := range p.Deny {
		doc.Deny = append(doc.Deny, r.Pattern)
	}
	for _, pr := range p.AllowPrivate {
		doc.AllowPrivate = append(doc.AllowPrivate, pr.String())
	}
	for _, hr := range p.Rules {
		if doc.Rules == nil {
			doc.Rules = map[string][]string{}
		}
		for _, rr := range hr.Requests {
			doc.Rules[hr.Host.Pattern] = append(doc.Rules[hr.Host.Pattern], rr.Text)
		}
	}
	b, err := yaml.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("narrow policy: %w", err)
	}
	return append([]byte("# "+header+"\n"), b...), nil
}
