package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/net/publicsuffix"
	"gopkg.in/yaml.v3"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// Rule is one allow or deny entry after validation.
type Rule struct {
	Pattern  string `json:"pattern"`           // as written, canonicalised: "example.com", "*.example.com:8443"
	Host     string `json:"-"`                 // canonical name (without "*.") or IP
	Wildcard bool   `json:"-"`                 // "*.host": strict subdomains of Host, not Host itself
	Port     int    `json:"port,omitempty"`    // 0: default ports (allow) or every port (deny)
	Service  string `json:"service,omitempty"` // set when the rule comes from the services catalog
	Source   string `json:"source"`            // "file:line"
	section  string
}

// Name is how decisions, 403 answers and the audit log refer to r:
// `domains localhost:8080`, `services.github github.com`, `deny evil.com`.
func (r *Rule) Name() string {
	if r.Service != "" {
		return "services." + r.Service + " " + r.Pattern
	}
	return r.section + " " + r.Pattern
}

// Policy is a parsed (and possibly merged) egress policy.
type Policy struct {
	Services     []string       `json:"services"`
	Domains      []*Rule        `json:"domains"`
	Deny         []*Rule        `json:"deny"`
	AllowPrivate []netip.Prefix `json:"allow_private"`
	Rules        []*HostRules   `json:"rules"`
	// Trusted are the hosts whose responses do not taint a session
	// (besides the claude service's, always trusted): src/provenance.
	Trusted []*Rule  `json:"trusted"`
	Files   []string `json:"files"`

	allow, deny, rules, trusted ruleIndex
	rulesOf                     map[*Rule]*HostRules
}

type ruleIndex struct {
	exact map[string][]*Rule
	wild  map[string][]*Rule // keyed by the suffix after "*."
}

func (ix *ruleIndex) add(r *Rule) {
	if ix.exact == nil {
		ix.exact, ix.wild = map[string][]*Rule{}, map[string][]*Rule{}
	}
	if r.Wildcard {
		ix.wild[r.Host] = append(ix.wild[r.Host], r)
	} else {
		ix.exact[r.Host] = append(ix.exact[r.Host], r)
	}
}

// find returns the first rule matching host:port; portOK decides whether a
// rule's port admits port.
func (ix *ruleIndex) find(host string, ip bool, port int, portOK func(*Rule, int) bool) *Rule {
	for _, r := range ix.exact[host] {
		if portOK(r, port) {
			return r
		}
	}
	if ip {
		return nil
	}
	for i := 0; i < len(host); i++ {
		if host[i] != '.' {
			continue
		}
		for _, r := range ix.wild[host[i+1:]] {
			if portOK(r, port) {
				return r
			}
		}
	}
	return nil
}

// Decision is the verdict on one destination.
type Decision struct {
	Allow  bool   `json:"allow"`
	Rule   string `json:"rule"`             // the rule that decided, or "default-deny" / "address-guard" / "bad-target"
	Reason string `json:"reason,omitempty"` // for denials: a short human reason
	Host   string `json:"host"`
	Port   int    `json:"port"`
	Source string `json:"source,omitempty"` // file:line of the rule
}

// Decide applies the policy to a canonical host (see NormalizeHost) and port.
// connect says which proxy path asks: CONNECT tunnels (entries without a
// port allow 443) or plain HTTP (80 and 443). Deny entries win.
func (p *Policy) Decide(host string, port int, connect bool) Decision {
	d := Decision{Host: host, Port: port}
	_, perr := netip.ParseAddr(host)
	ip := perr == nil
	if r := p.deny.find(host, ip, port, denyPortOK); r != nil {
		d.Rule, d.Source, d.Reason = r.Name(), r.Source, "listed under deny"
		return d
	}
	if r := p.allow.find(host, ip, port, allowPortOK(connect)); r != nil {
		d.Allow, d.Rule, d.Source = true, r.Name(), r.Source
		return d
	}
	d.Rule = "default-deny"
	switch {
	case ip:
		d.Reason = "an IP address is not a listed name"
	case p.allow.find(host, ip, 0, func(*Rule, int) bool { return true }) != nil:
		d.Reason = fmt.Sprintf("port %d is not allowed for this host", port)
	default:
		d.Reason = "host is not in the allowlist"
	}
	return d
}

func denyPortOK(r *Rule, port int) bool { return r.Port == 0 || r.Port == port }

func allowPortOK(connect bool) func(*Rule, int) bool {
	if connect {
		return func(r *Rule, port int) bool { return port == r.Port || r.Port == 0 && port == 443 }
	}
	return func(r *Rule, port int) bool { return port == r.Port || r.Port == 0 && (port == 80 || port == 443) }
}

// ParseFile reads and parses one policy file. It is opened beneath its own
// directory (the instance root, or /etc/hobbs in the proxy's container):
// a link or special file in its place is refused, never followed.
func ParseFile(path string) (*Policy, error) {
	data, err := safefile.Beneath(filepath.Dir(path)).ReadFile(filepath.Base(path), instance.MaxTextFile)
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "read policy")
	}
	return Parse(path, data)
}

// LoadFiles parses each file and merges them in order.
func LoadFiles(paths ...string) (*Policy, error) {
	var ps []*Policy
	for _, path := range paths {
		p, err := ParseFile(path)
		if err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	return Merge(ps...), nil
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// Parse parses a policy document; name is used in error messages. Every
// problem is reported as "name:line: reason" (exit 2), all at once.
func Parse(name string, data []byte) (*Policy, error) {
	p := &Policy{Files: []string{name}}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
			return nil, errs.Usagef("%s:%s: %s", name, m[1], m[2])
		}
		return nil, errs.Usagef("%s: %s", name, msg)
	}
	if len(doc.Content) == 0 {
		p.build()
		return p, nil
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		p.build()
		return p, nil
	}
	var problems []string
	bad := func(n *yaml.Node, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("%s:%d: %s", name, n.Line, fmt.Sprintf(format, args...)))
	}
	if root.Kind != yaml.MappingNode {
		bad(root, "a policy is a mapping with keys services, domains, deny, allow_private, rules, trusted")
		return nil, errs.Usagef("%s", strings.Join(problems, "\n"))
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if seen[k.Value] {
			bad(k, "duplicate key %q", k.Value)
			continue
		}
		seen[k.Value] = true
		var items []*yaml.Node
		switch {
		case v.Kind == yaml.ScalarNode && v.Tag == "!!null":
		case v.Kind == yaml.SequenceNode:
			items = v.Content
		default:
			if k.Value == "rules" {
				break
			}
			if k.Value == "services" || k.Value == "domains" || k.Value == "deny" || k.Value == "allow_private" || k.Value == "trusted" {
				bad(v, "%s must be a list", k.Value)
				continue
			}
		}
		for _, it := range items {
			if it.Kind != yaml.ScalarNode && k.Value != "rules" {
				bad(it, "%s entries must be strings", k.Value)
			}
		}
		switch k.Value {
		case "services":
			for _, it := range items {
				if it.Kind != yaml.ScalarNode {
					continue
				}
				s := strings.ToLower(strings.TrimSpace(it.Value))
				if _, ok := catalog[s]; !ok {
					bad(it, "unknown service %q (known: %s)", it.Value, strings.Join(ServiceNames(), ", "))
					continue
				}
				p.Services = append(p.Services, s)
			}
		case "domains", "deny", "trusted":
			for _, it := range items {
				if it.Kind != yaml.ScalarNode {
					continue
				}
				r, err := ParseRule(it.Value)
				if err != nil {
					bad(it, "%s: %v", k.Value, err)
					continue
				}
				r.Source, r.section = fmt.Sprintf("%s:%d", name, it.Line), k.Value
				switch k.Value {
				case "domains":
					p.Domains = append(p.Domains, r)
				case "deny":
					p.Deny = append(p.Deny, r)
				default:
					p.Trusted = append(p.Trusted, r)
				}
			}
		case "rules":
			p.Rules = append(p.Rules, parseRules(name, v, bad)...)
		case "allow_private":
			for _, it := range items {
				if it.Kind != yaml.ScalarNode {
					continue
				}
				pre, err := netip.ParsePrefix(strings.TrimSpace(it.Value))
				if err != nil {
					bad(it, "allow_private: %q is not a CIDR range like 10.0.0.0/8 or fd00::/8", it.Value)
					continue
				}
				// The guard judges IPv4-mapped addresses as IPv4, so a range
				// written in mapped form (::ffff:10.0.0.0/104) is stored as the
				// IPv4 range it means; otherwise it would never match.
				if pre.Addr().Is4In6() && pre.Bits() >= 96 {
					pre = netip.PrefixFrom(pre.Addr().Unmap(), pre.Bits()-96)
				}
				p.AllowPrivate = append(p.AllowPrivate, pre.Masked())
			}
		default:
			bad(k, "unknown key %q (known: services, domains, deny, allow_private, rules, trusted)", k.Value)
		}
	}
	if len(problems) > 0 {
		return nil, errs.Usagef("%s", strings.Join(problems, "\n"))
	}
	p.build()
	return p, nil
}

// ParseRule validates one domains:/deny: entry: an exact host or IP, or
// "*.name" for the strict subdomains of name, optionally followed by
// ":port". A wildcard over a public suffix ("*.com", "*.co.uk") is refused.
func ParseRule(s string) (*Rule, error) {
	raw := s
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("empty entry")
	}
	if strings.Contains(s, "://") || strings.ContainsAny(s, "/?#@ \t") {
		if !strings.Contains(s, "://") && !strings.ContainsAny(s, "/?#@") {
			return nil, fmt.Errorf("%q is not a host name: it has a space (e.g. api.example.com or api.example.com:8443)", raw)
		}
		return nil, fmt.Errorf("%q: write a host name, not a URL (e.g. api.example.com or api.example.com:8443)", raw)
	}
	r := &Rule{}
	hostPart := s
	if strings.HasPrefix(s, "[") {
		if i := strings.Index(s, "]"); i >= 0 {
			hostPart = s[:i+1]
			if rest := s[i+1:]; rest != "" {
				if !strings.HasPrefix(rest, ":") {
					return nil, fmt.Errorf("%q: invalid entry", raw)
				}
				port, err := ParsePort(rest[1:])
				if err != nil {
					return nil, fmt.Errorf("%q: %v", raw, err)
				}
				r.Port = port
			}
		}
	} else if i := strings.LastIndexByte(s, ':'); i >= 0 {
		if strings.Count(s, ":") > 1 {
			return nil, fmt.Errorf("%q: bracket IPv6 addresses, e.g. [2001:db8::1]:443", raw)
		}
		port, err := ParsePort(s[i+1:])
		if err != nil {
			return nil, fmt.Errorf("%q: %v (ports are 1-65535 after the last colon)", raw, err)
		}
		hostPart, r.Port = s[:i], port
	}
	if strings.HasPrefix(hostPart, "*.") {
		r.Wildcard = true
		hostPart = hostPart[2:]
	}
	if strings.Contains(hostPart, "*") {
		return nil, fmt.Errorf("%q: a wildcard is allowed only as a whole first label, as in *.example.com", raw)
	}
	h, err := NormalizeHost(hostPart)
	if err != nil {
		return nil, fmt.Errorf("%q: %v", raw, err)
	}
	if r.Wildcard {
		if h.IsIP() {
			return nil, fmt.Errorf("%q: a wildcard needs a domain name, not an address", raw)
		}
		if ps, _ := publicsuffix.PublicSuffix(h.Name); ps == h.Name {
			return nil, fmt.Errorf("%q: a wildcard over a public suffix would allow a whole top-level domain", raw)
		}
	}
	r.Host = h.String()
	r.Pattern = r.Host
	if h.IP.Is6() {
		r.Pattern = "[" + r.Host + "]"
	}
	if r.Wildcard {
		r.Pattern = "*." + r.Pattern
	}
	if r.Port != 0 {
		r.Pattern += ":" + strconv.Itoa(r.Port)
	}
	return r, nil
}

// Merge combines policies in order: services, domains, deny and
// allow_private are unions. Deny entries win regardless of which file they
// come from.
func Merge(ps ...*Policy) *Policy {
	m := &Policy{}
	seenSvc := map[string]bool{}
	for _, p := range ps {
		if p == nil {
			continue
		}
		m.Files = append(m.Files, p.Files...)
		for _, s := range p.Services {
			if !seenSvc[s] {
				seenSvc[s] = true
				m.Services = append(m.Services, s)
			}
		}
		m.Domains = append(m.Domains, p.Domains...)
		m.Deny = append(m.Deny, p.Deny...)
		m.AllowPrivate = append(m.AllowPrivate, p.AllowPrivate...)
		m.Rules = append(m.Rules, p.Rules...)
		m.Trusted = append(m.Trusted, p.Trusted...)
	}
	m.build()
	return m
}

func (p *Policy) build() {
	p.allow, p.deny = ruleIndex{}, ruleIndex{}
	for _, r := range p.Domains {
		p.allow.add(r)
	}
	for _, s := range p.Services {
		for _, d := range catalog[s].Domains {
			r, err := ParseRule(d)
			if err != nil {
				panic("egress: bad catalog entry " + d + ": " + err.Error())
			}
			r.Service, r.Source, r.section = s, "services catalog", "services"
			p.allow.add(r)
		}
	}
	for _, r := range p.Deny {
		p.deny.add(r)
	}
	p.trusted = ruleIndex{}
	for _, r := range p.Trusted {
		p.trusted.add(r)
	}
	if p.Trusted == nil {
		p.Trusted = []*Rule{}
	}
	if p.Services == nil {
		p.Services = []string{}
	}
	if p.Domains == nil {
		p.Domains = []*Rule{}
	}
	if p.Deny == nil {
		p.Deny = []*Rule{}
	}
	if p.AllowPrivate == nil {
		p.AllowPrivate = []netip.Prefix{}
	}
	if p.Rules == nil {
		p.Rules = []*HostRules{}
	}
	p.buildRules()
}

// AlwaysTrusted is the service whose hosts are trusted in every policy:
// Claude's own API, which every session talks to.
const AlwaysTrusted = "claude"

// Trusts reports whether host's responses leave a session untainted: a host
// of the claude service, or one the trusted: list names (an entry's port is
// not considered).
func (p *Policy) Trusts(host string) bool {
	h, err := NormalizeHost(host)
	if err != nil {
		return false
	}
	for _, d := range catalog[AlwaysTrusted].Domains {
		if d == h.String() {
			return true
		}
	}
	return p.trusted.find(h.String(), h.IsIP(), 0, func(*Rule, int) bool { return true }) != nil
}

// Summary is one line describing p, for the proxy's start-up log.
func (p *Policy) Summary() string {
	return fmt.Sprintf("services=[%s] domains=%d deny=%d allow_private=%d rules=%d",
		strings.Join(p.Services, ","), len(p.Domains), len(p.Deny), len(p.AllowPrivate), len(p.Rules))
}

// MarshalJSON is the effective policy with the services expanded.
func (p *Policy) MarshalJSON() ([]byte, error) {
	type svc struct {
		Name    string   `json:"name"`
		Domains []string `json:"domains"`
	}
	var svcs []svc
	for _, s := range p.Services {
		svcs = append(svcs, svc{s, catalog[s].Domains})
	}
	if svcs == nil {
		svcs = []svc{}
	}
	prefixes := make([]string, 0, len(p.AllowPrivate))
	for _, pre := range p.AllowPrivate {
		prefixes = append(prefixes, pre.String())
	}
	var buf bytes.Buffer
	err := json.NewEncoder(&buf).Encode(struct {
		Files        []string     `json:"files"`
		Services     []svc        `json:"services"`
		Domains      []*Rule      `json:"domains"`
		Deny         []*Rule      `json:"deny"`
		AllowPrivate []string     `json:"allow_private"`
		Rules        []*HostRules `json:"rules"`
		Trusted      []*Rule      `json:"trusted"`
	}{p.Files, svcs, p.Domains, p.Deny, prefixes, p.Rules, p.Trusted})
	return bytes.TrimSpace(buf.Bytes()), err
}
