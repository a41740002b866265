package policy

import (
	"net/netip"
	"net/url"
	"strings"

	"github.com/hobbs-agent/hobbs/src/errs"
)

// Explain is the one account of what the proxy does with a destination:
// whether the policy allows it and by which rule, and how its traffic is
// carried — an opaque tunnel, a tunnel the proxy intercepts (and why: the
// secrets bound to it, its request rules), or plain HTTP, which the proxy
// always reads. The proxy asks it for every CONNECT and every request it
// reads; `hobbs policy check` asks it for the destination a user names.

// Target is a destination as the proxy judges it.
type Target struct {
	Host    string // canonical (NormalizeHost)
	Port    int
	Connect bool // reached through a CONNECT tunnel (HTTPS); false: plain HTTP
}

// ParseTarget reads a destination as a user writes it: a URL (http:// is
// the plain-HTTP path, https:// a CONNECT tunnel) or HOST[:PORT] (a CONNECT
// tunnel, port 443 by default).
func ParseTarget(target string) (Target, error) {
	connect, host, portText := true, "", ""
	if strings.Contains(target, "://") {
		u, err := url.Parse(target)
		if err != nil {
			return Target{}, errs.Usagef("invalid URL %q", target)
		}
		switch strings.ToLower(u.Scheme) {
		case "http":
			connect, portText = false, "80"
		case "https":
			portText = "443"
		default:
			return Target{}, errs.Usagef("unsupported scheme %q: the proxy carries http and https", u.Scheme)
		}
		host = u.Hostname()
		if u.Port() != "" {
			portText = u.Port()
		}
	} else {
		host, portText = target, "443"
		if i := strings.LastIndexByte(target, ':'); i >= 0 && !strings.HasSuffix(target, "]") && strings.Count(target, ":") == 1 || strings.Contains(target, "]:") {
			host, portText = target[:i], target[i+1:]
		}
	}
	h, err := NormalizeHost(host)
	if err != nil {
		return Target{}, errs.Usagef("%v", err)
	}
	port, err := ParsePort(portText)
	if err != nil {
		return Target{}, errs.Usagef("%v", err)
	}
	return Target{Host: h.String(), Port: port, Connect: connect}, nil
}

// Mode is how the proxy carries an allowed destination's traffic.
type Mode string

const (
	// ModeTunnel: a CONNECT tunnel relayed byte for byte, TLS end to end.
	ModeTunnel Mode = "tunnel"
	// ModeIntercepted: a CONNECT tunnel whose TLS the proxy terminates with
	// the session CA, reading every request inside.
	ModeIntercepted Mode = "intercepted"
	// ModePlain: plain HTTP, every request read.
	ModePlain Mode = "plain"
)

// Explanation is what the proxy does with one destination.
type Explanation struct {
	Decision
	// Mode is how an allowed destination is carried; empty when denied.
	Mode Mode `json:"mode,omitempty"`
	// Secrets names the secrets bound to the destination, in the order
	// given: the proxy puts their values in its requests.
	Secrets []string `json:"secrets"`
	// Rules are the destination's request rules, or nil.
	Rules *HostRules `json:"-"`
}

// Intercepted reports whether the proxy terminates the destination's TLS.
func (e *Explanation) Intercepted() bool { return e.Mode == ModeIntercepted }

// Bound reports whether the secret named name is bound to the destination.
func (e *Explanation) Bound(name string) bool {
	for _, n := range e.Secrets {
		if n == name {
			return true
		}
	}
	return false
}

// Explain says what the proxy does with t: the policy's verdict (an IP
// literal also goes through the address guard; names are resolved only
// when the proxy connects), then, for an allowed destination, the secrets
// of bindings bound to it and its request rules. A tunnel is intercepted
// when either exists: substitution and request rules need the requests
// read. canIntercept says whether the proxy has a session CA; without one
// a tunnel that would be intercepted is denied (rule
// "interception-unavailable"), as its rules could not be applied.
func (p *Policy) Explain(t Target, bindings []Matcher, canIntercept bool) Explanation {
	e := Explanation{Decision: p.Decide(t.Host, t.Port, t.Connect)}
	if !e.Allow {
		return e
	}
	if a, err := netip.ParseAddr(t.Host); err == nil {
		if ok, why := p.AddrAllowed(a); !ok {
			e.Allow, e.Rule, e.Reason, e.Source = false, "address-guard", why, ""
			return e
		}
	}
	e.Rules = p.requestRules(t.Host, t.Port, t.Connect)
	for _, b := range bindings {
		if b.BoundTo(t) {
			e.Secrets = append(e.Secrets, b.Name)
		}
	}
	switch {
	case !t.Connect:
		e.Mode = ModePlain
	case e.Rules == nil && len(e.Secrets) == 0:
		e.Mode = ModeTunnel
	case !canIntercept:
		e.Allow, e.Rule = false, "interception-unavailable"
		e.Reason = "the host has request rules, which this proxy cannot apply to HTTPS without a session CA"
		if e.Rules == nil {
			e.Reason = "secrets are bound to the host, which this proxy cannot put in HTTPS without a session CA"
		}
		e.Rules, e.Secrets = nil, nil
	default:
		e.Mode = ModeIntercepted
	}
	return e
}

// Check decides a target as a user writes it (see ParseTarget): the
// verdict of Explain, without secrets.
func (p *Policy) Check(target string) (Decision, error) {
	t, err := ParseTarget(target)
	if err != nil {
		return Decision{}, err
	}
	return p.Explain(t, nil, true).Decision, nil
}
