package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Binding binds a vault entry to the hosts that may receive it: one entry
// of config.yaml's secrets:, the secret a plan names, and (with its
// placeholder and value) a session's Secret. The agent gets a
// placeholder; the proxy puts the value in its place in requests to Hosts
// only, in the positions In names (headers when nil: DefaultIn) of the
// Requests it names ("METHODS PATH"; every request when nil). Hosts take
// the policy's domains forms. Check validates a binding; Compile gives the
// Matcher that Explain and the proxy use.
type Binding struct {
	// Name is the variable the agent holds the placeholder in, e.g.
	// GITHUB_TOKEN. config.yaml writes it as the key of secrets: (so it is
	// empty in config.Config.Secrets; config.Config.Bindings fills it).
	Name     string   `yaml:"-" json:"name,omitempty"`
	Vault    string   `yaml:"vault" json:"vault"` // the vault entry holding the value
	Hosts    []string `yaml:"hosts" json:"hosts"`
	In       []string `yaml:"in,omitempty" json:"in,omitempty"`
	Requests []string `yaml:"requests,omitempty" json:"requests,omitempty"`
	// Kind is empty for a value sent as it is, or KindAWSSigV4: the vault
	// entry holds an AWS access key id and secret access key (two lines),
	// the agent gets placeholders of both (AWSKeyIDVar, AWSSecretKeyVar),
	// and the proxy signs the agent's SigV4 requests again with the real
	// keys.
	Kind string `yaml:"kind,omitempty" json:"kind,omitempty"`
}

// KindAWSSigV4 is the binding kind of an AWS key pair. Its variable is
// AWSKeyIDVar; the agent also gets AWSSecretKeyVar.
const (
	KindAWSSigV4    = "aws-sigv4"
	AWSKeyIDVar     = "AWS_ACCESS_KEY_ID"
	AWSSecretKeyVar = "AWS_SECRET_ACCESS_KEY"
)

// PositionNames are the request positions a binding's in: may name, in
// order.
var PositionNames = []string{"header", "path", "query", "body"}

// Positions are the positions the binding's value may go in, in the order
// of PositionNames: its in:, or header when it has none.
func (b Binding) Positions() []string {
	if b.In == nil {
		return []string{"header"}
	}
	var out []string
	for _, p := range PositionNames {
		if slices.Contains(b.In, p) {
			out = append(out, p)
		}
	}
	return out
}

// Where says where in a request the binding's value goes: "in header",
// "in path", "in body (POST /token)", "signing requests (aws-sigv4)".
func (b Binding) Where() string {
	s := "in " + strings.Join(b.Positions(), ", ")
	if b.Kind == KindAWSSigV4 {
		s = "signing requests (aws-sigv4)"
	}
	if len(b.Requests) > 0 {
		s += " (" + strings.Join(b.Requests, ", ") + ")"
	}
	return s
}

// Check validates a binding: its hosts (the policy's domains forms), in:
// and requests:. The error names the key.
func (b Binding) Check() error {
	_, err := b.Compile()
	return err
}

// Compile checks the binding and returns its Matcher.
func (b Binding) Compile() (Matcher, error) {
	rules, err := parseHosts(b.Hosts)
	if err != nil {
		return Matcher{}, err
	}
	pl, err := ParsePlacement(b.In, b.Requests)
	if err != nil {
		return Matcher{}, err
	}
	return Matcher{Name: b.Name, Place: pl, rules: rules}, nil
}

// Matcher is a compiled binding: the hosts it admits (BoundTo) and where
// in their requests the value may go. It is all Explain and the proxy
// know of a secret's binding (never its value).
type Matcher struct {
	Name  string
	Place Placement
	rules []*Rule
}

// BoundTo reports whether the secret may be sent to t. A bare host admits
// 443 through a tunnel (HTTPS, which the proxy intercepts) and 80 as plain
// HTTP; a host with a port admits that port on either path.
func (m Matcher) BoundTo(t Target) bool {
	ip := isIPLiteral(t.Host)
	for _, r := range m.rules {
		if r.Port != 0 && r.Port != t.Port || r.Port == 0 && (t.Connect && t.Port != 443 || !t.Connect && t.Port != 80) {
			continue
		}
		if r.Host == t.Host && !r.Wildcard || r.Wildcard && !ip && strings.HasSuffix(t.Host, "."+r.Host) {
			return true
		}
	}
	return false
}

// parseHosts validates a binding's hosts, which take the policy's domains
// forms (names, "*." wildcards, IP literals, optional ":port").
func parseHosts(hosts []string) ([]*Rule, error) {
	if len(hosts) == 0 {
		return nil, errors.New("hosts: at least one host may receive the secret")
	}
	out := make([]*Rule, 0, len(hosts))
	for _, h := range hosts {
		r, err := ParseRule(h)
		if err != nil {
			return nil, fmt.Errorf("hosts: %v", err)
		}
		out = append(out, r)
	}
	return out, nil
}

func isIPLiteral(host string) bool {
	h, err := NormalizeHost(host)
	return err == nil && h.IsIP()
}
