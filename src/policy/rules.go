package policy

import (
	"fmt"
	"path"
	"strings"

	"gopkg.in/yaml.v3"
)

// Request rules refine what an allowed host may be sent, by method and path,
// in policy.yaml:
//
//	rules:
//	  api.github.com:
//	    - allow GET,POST /repos/
//	    - deny DELETE
//
// A key takes the domains forms. Each entry is "allow|deny METHODS [PATH]":
// METHODS is a comma-separated list or "*", PATH a prefix of the request's
// path ("/repos/" matches "/repos/x"; "/repos" matches "/repos" and
// "/repos/x", not "/reposx"). The first entry that matches decides; a
// request no entry matches is denied when the host has an allow entry and
// allowed otherwise. Rules apply after the host rule (a host is not allowed
// by having rules) to every request the proxy sees: plain HTTP, and HTTPS to
// a host with rules, which the proxy therefore intercepts (src/egress, intercept.go).

// HostRules are the request rules of one host pattern.
type HostRules struct {
	Host     *Rule          `json:"host"`
	Requests []*RequestRule `json:"requests"`
	hasAllow bool
}

// RequestRule is one entry of a host's rules.
type RequestRule struct {
	Allow   bool     `json:"allow"`
	Methods []string `json:"methods"` // nil: every method
	Prefix  string   `json:"path,omitempty"`
	Text    string   `json:"rule"`   // as written, normalised
	Source  string   `json:"source"` // file:line
}

// parseRules parses the rules: mapping of a policy file.
func parseRules(name string, v *yaml.Node, bad func(*yaml.Node, string, ...any)) []*HostRules {
	if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		return nil
	}
	if v.Kind != yaml.MappingNode {
		bad(v, "rules must be a mapping of host to a list of rules, e.g.\n  rules:\n    api.github.com:\n      - allow GET /repos/")
		return nil
	}
	var out []*HostRules
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, list := v.Content[i], v.Content[i+1]
		host, err := ParseRule(k.Value)
		if err != nil {
			bad(k, "rules: %v", err)
			continue
		}
		host.Source, host.section = fmt.Sprintf("%s:%d", name, k.Line), "rules"
		if list.Kind != yaml.SequenceNode {
			bad(list, "rules %s must be a list like [\"allow GET /repos/\", \"deny DELETE\"]", k.Value)
			continue
		}
		hr := &HostRules{Host: host}
		for _, it := range list.Content {
			if it.Kind != yaml.ScalarNode {
				bad(it, "rules entries must be strings")
				continue
			}
			rr, err := ParseRequestRule(it.Value)
			if err != nil {
				bad(it, "rules %s: %v", k.Value, err)
				continue
			}
			rr.Source = fmt.Sprintf("%s:%d", name, it.Line)
			hr.Requests = append(hr.Requests, rr)
		}
		out = append(out, hr)
	}
	return out
}

// ParseRequestRule parses "allow|deny METHODS [PATH]".
func ParseRequestRule(s string) (*RequestRule, error) {
	f := strings.Fields(s)
	if len(f) < 2 || len(f) > 3 {
		return nil, fmt.Errorf("%q: write allow|deny METHODS [PATH], e.g. \"allow GET,POST /repos/\"", s)
	}
	rr := &RequestRule{}
	switch f[0] {
	case "allow":
		rr.Allow = true
	case "deny":
	default:
		return nil, fmt.Errorf("%q: a rule starts with allow or deny", s)
	}
	if f[1] != "*" {
		for _, m := range strings.Split(f[1], ",") {
			if m == "" || strings.ToUpper(m) != m || strings.ContainsFunc(m, func(r rune) bool { return r < 'A' || r > 'Z' }) {
				return nil, fmt.Errorf("%q: %q is not a method (GET, POST, …, or * for every method)", s, m)
			}
			rr.Methods = append(rr.Methods, m)
		}
	}
	if len(f) == 3 {
		p := f[2]
		if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, "?#%\\") || cleanPath(p) != p {
			return nil, fmt.Errorf("%q: the path %q must start with / and be plain (no query, %%, \\, . or .. segments)", s, p)
		}
		rr.Prefix = p
	}
	rr.Text = strings.Join(f, " ")
	return rr, nil
}

// cleanPath is path.Clean keeping a trailing slash.
func cleanPath(p string) string {
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}

// RequestDecision is the verdict of request rules on one request.
type RequestDecision struct {
	Allow  bool
	Rule   string // "rules HOST: allow GET /repos/" or "rules HOST: no rule allows"
	Source string
}

// Check applies the rules to a request. path is the request's escaped path
// (as sent); one that is ambiguous — a dot segment, an empty segment, a
// ";" (a path parameter), an encoded slash or backslash, an invalid escape
// — is denied, as is a method not in upper case: the server may read them
// otherwise than the rules do.
func (hr *HostRules) Check(method, escapedPath string) RequestDecision {
	name := "rules " + hr.Host.Pattern + ": "
	// Servers that read methods case-insensitively would take "delete"
	// for DELETE, which the rules (upper case) would not match.
	if method != strings.ToUpper(method) {
		return RequestDecision{Rule: name + "ambiguous method", Source: hr.Host.Source}
	}
	p, ok := plainPath(escapedPath)
	if !ok {
		return RequestDecision{Rule: name + "ambiguous path", Source: hr.Host.Source}
	}
	for _, rr := range hr.Requests {
		if rr.matches(method, p) {
			return RequestDecision{Allow: rr.Allow, Rule: name + rr.Text, Source: rr.Source}
		}
	}
	if hr.hasAllow {
		return RequestDecision{Rule: name + "no rule allows " + method + " " + p, Source: hr.Host.Source}
	}
	return RequestDecision{Allow: true, Rule: name + "no rule matches", Source: hr.Host.Source}
}

func (rr *RequestRule) matches(method, p string) bool {
	if rr.Methods != nil {
		found := false
		for _, m := range rr.Methods {
			if m == method {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if rr.Prefix == "" {
		return true
	}
	if strings.HasSuffix(rr.Prefix, "/") {
		return strings.HasPrefix(p, rr.Prefix)
	}
	return p == rr.Prefix || strings.HasPrefix(p, rr.Prefix+"/")
}

// plainPath decodes an escaped request path; ok is false when the path is
// ambiguous: not absolute, a "." or ".." segment (also encoded), an
// encoded "/" or "\", a backslash, or an invalid escape.
func plainPath(escaped string) (string, bool) {
	if escaped == "" {
		return "/", true
	}
	if !strings.HasPrefix(escaped, "/") || strings.ContainsAny(escaped, "\\;") {
		return "", false
	}
	var b strings.Builder
	for i := 0; i < len(escaped); i++ {
		c := escaped[i]
		if c == '%' {
			if i+2 >= len(escaped) {
				return "", false
			}
			d, ok := Unhex2(escaped[i+1], escaped[i+2])
			if !ok || d == '/' || d == '\\' || d == ';' || d == 0 {
				return "", false
			}
			c = d
			i += 2
		}
		b.WriteByte(c)
	}
	p := b.String()
	segs := strings.Split(p, "/")
	for i, seg := range segs {
		// An empty segment ("//x") is read as "/x" by many servers.
		if seg == "." || seg == ".." || seg == "" && i > 0 && i < len(segs)-1 {
			return "", false
		}
	}
	return p, true
}

// requestRules returns the rules for host:port, or nil.
func (p *Policy) requestRules(host string, port int, connect bool) *HostRules {
	if len(p.Rules) == 0 {
		return nil
	}
	r := p.rules.find(host, isIPLiteral(host), port, allowPortOK(connect))
	if r == nil {
		return nil
	}
	return p.rulesOf[r]
}

// buildRules indexes the rules, joining the entries of one pattern from
// several files in order.
func (p *Policy) buildRules() {
	p.rules, p.rulesOf = ruleIndex{}, map[*Rule]*HostRules{}
	byPattern := map[string]*HostRules{}
	for _, hr := range p.Rules {
		hr.hasAllow = false
		for _, rr := range hr.Requests {
			hr.hasAllow = hr.hasAllow || rr.Allow
		}
		if prev, ok := byPattern[hr.Host.Pattern]; ok {
			joined := &HostRules{Host: prev.Host, Requests: append(append([]*RequestRule{}, prev.Requests...), hr.Requests...),
				hasAllow: prev.hasAllow || hr.hasAllow}
			byPattern[hr.Host.Pattern] = joined
			p.rulesOf[prev.Host] = joined
			continue
		}
		byPattern[hr.Host.Pattern] = hr
		p.rules.add(hr.Host)
		p.rulesOf[hr.Host] = hr
	}
}

// Unhex2 is the byte the hex digits a and b write (ok false when either
// is not one).
func Unhex2(a, b byte) (byte, bool) {
	x, ok1 := unhex(a)
	y, ok2 := unhex(b)
	return x<<4 | y, ok1 && ok2
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
