package policy

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// CheckReport is what hobbs policy check reports on one destination: the
// decision, the host's request rules (text and where each is written) and
// the secrets bound to it.
type CheckReport struct {
	Decision
	Rules   []string `json:"request_rules"`
	Secrets []string `json:"secrets"`
	// SecretsIn says, for each bound secret, where in a request the proxy
	// puts it (Placement.String).
	SecretsIn   map[string]string `json:"secrets_in"`
	Intercepted bool              `json:"intercepted"`
}

// Report explains t as a session's proxy does: it always has a session CA,
// so it can intercept. bindings are config.yaml's secrets:, named
// (config.Config.Bindings), taken in the order of their names; a binding
// that does not compile is left out (config validation reports it). Rules
// and Secrets are never nil, so the JSON holds lists.
func (p *Policy) Report(t Target, bindings []Binding) CheckReport {
	bindings = slices.Clone(bindings)
	slices.SortFunc(bindings, func(a, b Binding) int { return strings.Compare(a.Name, b.Name) })
	var matchers []Matcher
	where := map[string]string{}
	for _, b := range bindings {
		if m, err := b.Compile(); err == nil {
			matchers = append(matchers, m)
			where[b.Name] = m.Place.String()
			if b.Kind != "" {
				where[b.Name] = "signing requests (" + b.Kind + ")"
			}
		}
	}
	x := p.Explain(t, matchers, true)
	c := CheckReport{Decision: x.Decision, Rules: []string{}, Secrets: append([]string{}, x.Secrets...),
		SecretsIn: map[string]string{}, Intercepted: x.Intercepted()}
	for _, n := range x.Secrets {
		c.SecretsIn[n] = where[n]
	}
	if x.Rules != nil {
		for _, rr := range x.Rules.Requests {
			c.Rules = append(c.Rules, rr.Text+" ("+rr.Source+")")
		}
	}
	return c
}

// WriteSummary prints the report for a reader: the verdict, the rule that
// decided and why, then the request rules, the bound secrets and whether
// HTTPS is intercepted.
func (c CheckReport) WriteSummary(w io.Writer) error {
	verdict := "deny"
	if c.Allow {
		verdict = "allow"
	}
	line := fmt.Sprintf("%s %s by %s", verdict, c.HostPort(), c.Rule)
	if c.Source != "" {
		line += " (" + c.Source + ")"
	}
	if c.Reason != "" {
		line += ": " + c.Reason
	}
	fmt.Fprintln(w, line)
	for _, r := range c.Rules {
		fmt.Fprintln(w, "  request rule: "+r)
	}
	if len(c.Secrets) > 0 {
		named := make([]string, len(c.Secrets))
		for i, n := range c.Secrets {
			w := c.SecretsIn[n]
			if !strings.HasPrefix(w, "signing") {
				w = "in " + w
			}
			named[i] = n + " (" + w + ")"
		}
		fmt.Fprintf(w, "  secrets bound here (config.yaml): %s\n", strings.Join(named, ", "))
	}
	if c.Intercepted {
		fmt.Fprintln(w, "  HTTPS to this host is intercepted by the proxy (session CA)")
	}
	return nil
}

// HostPort is the decision's destination as HOST:PORT, an IPv6 host in
// brackets.
func (d Decision) HostPort() string {
	h := d.Host
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	return fmt.Sprintf("%s:%d", h, d.Port)
}

// WriteSummary prints the effective policy for a reader: its files, the
// services with their domains, the domains and deny entries with where
// each is written, allow_private, and the services the catalog offers.
func (p *Policy) WriteSummary(out io.Writer) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "files:\t%s\n", strings.Join(p.Files, ", "))
	fmt.Fprintln(w, "services:")
	for _, s := range p.Services {
		fmt.Fprintf(w, "  %s\t%s\n", s, strings.Join(ServiceDomains(s), " "))
	}
	fmt.Fprintln(w, "domains:")
	for _, r := range p.Domains {
		fmt.Fprintf(w, "  %s\t%s\n", r.Pattern, r.Source)
	}
	fmt.Fprintln(w, "deny:")
	for _, r := range p.Deny {
		fmt.Fprintf(w, "  %s\t%s\n", r.Pattern, r.Source)
	}
	fmt.Fprintln(w, "allow_private:")
	for _, pre := range p.AllowPrivate {
		fmt.Fprintf(w, "  %s\n", pre)
	}
	fmt.Fprintf(w, "available services:\t%s\n", strings.Join(ServiceNames(), ", "))
	return w.Flush()
}
