package main

import (
	"fmt"
	"io/fs"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hobbs-agent/hobbs"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/launcher"
	"github.com/hobbs-agent/hobbs/src/policy"
)

func effectivePolicy(in instance.Instance) (*policy.Policy, error) {
	def, err := fs.ReadFile(hobbs.Dist, "policy.yaml")
	if err != nil {
		return nil, err
	}
	return policy.LoadEffective(in.FS(), launcher.BuiltinPolicyName, def, in.Policy())
}

// policyFile is the instance's policy.yaml as policy allow, deny and rm
// edit it.
func (a *app) policyFile(in instance.Instance) policy.PolicyFile {
	tmpl, _ := fs.ReadFile(hobbs.Templates, "policy.yaml")
	return policy.PolicyFile{Root: in.FS(), Path: in.Policy(), LockPath: in.Lock("policy"), Name: in.Rel(in.Policy()),
		Template: tmpl, Audit: a.audit(in)}
}

func newPolicyCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Show, check and edit the egress policy",
		Long: `The egress policy decides where the agent's container may connect. The
effective policy is the built-in default (the image's /etc/hobbs/policy.yaml)
plus your instance's policy.yaml; deny entries win over everything allowed.
See docs/egress.md for the format and the services catalog.`,
		Example: `  hobbs policy show
  hobbs policy check https://api.example.com/v1
  hobbs policy allow api.example.com
  hobbs policy deny gist.github.com`,
	}
	cmd.AddCommand(newPolicyShowCmd(a), newPolicyCheckCmd(a), newPolicyEditCmd(a, "allow"), newPolicyEditCmd(a, "deny"),
		newPolicyEditCmd(a, "trust"), newPolicyRmCmd(a))
	return cmd
}

func newPolicyShowCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "show",
		Short:   "Print the effective policy (built-in default plus the instance's policy.yaml)",
		Example: "  hobbs policy show\n  hobbs policy show --json | jq '.domains[].pattern'",
		Args:    usageArgs(cobra.NoArgs),
	}
	out := a.jsonFlag(cmd, "print as JSON")
	cmd.RunE = a.withInstance(func(cmd *cobra.Command, args []string, in instance.Instance) error {
		p, err := effectivePolicy(in)
		if err != nil {
			return err
		}
		return out.print(p, p.WriteSummary)
	})
	return cmd
}

func newPolicyCheckCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "check URL|HOST[:PORT]",
		Short: "Say whether the policy allows a destination, and by which rule (exit 0 allowed, 1 denied)",
		Long: `check applies the effective policy to one destination. A URL is judged on
the path the proxy would use (http:// as plain HTTP, https:// as a CONNECT
tunnel); HOST[:PORT] is judged as a CONNECT tunnel, port 443 by default.
Names are not resolved here: the proxy also refuses a name that resolves to
a private address (unless allow_private opens it) when it connects.

For an allowed host it also lists the host's request rules (policy.yaml
rules:) and the secrets config.yaml binds to it (secrets:), and says when
the proxy intercepts HTTPS to it.`,
		Example: "  hobbs policy check https://api.github.com/repos\n  hobbs policy check localhost:8080\n  hobbs policy check http://example.com/ --json",
		Args:    usageArgs(cobra.ExactArgs(1)),
	}
	out := a.jsonFlag(cmd, "print the decision as JSON")
	cmd.RunE = a.withInstance(func(cmd *cobra.Command, args []string, in instance.Instance) error {
		p, err := effectivePolicy(in)
		if err != nil {
			return err
		}
		t, err := policy.ParseTarget(args[0])
		if err != nil {
			return err
		}
		var bound []policy.Binding
		if cfg, err := a.config(in); err == nil {
			bound = cfg.Bindings()
		}
		c := p.Report(t, bound)
		if err := out.print(c, c.WriteSummary); err != nil {
			return err
		}
		if !c.Allow {
			return &errs.Error{Code: errs.Failure, Msg: c.HostPort() + " is denied"}
		}
		return nil
	})
	return cmd
}

func newPolicyEditCmd(a *app, verb string) *cobra.Command {
	section, what := "domains", "allows"
	ex := "  hobbs policy allow api.example.com\n  hobbs policy allow '*.example.com'     # subdomains, not example.com itself\n  hobbs policy allow localhost:8080"
	switch verb {
	case "deny":
		section, what = "deny", "denies (deny wins over any allow)"
		ex = "  hobbs policy deny tracker.example.com\n  hobbs policy deny '*.ads.example.com'"
	case "trust":
		section, what = "trusted", "lists the hosts whose responses do not make a session's changes wait for\nhobbs review (docs/memory.md, \"Provenance and quarantine\")"
		ex = "  hobbs policy trust docs.example.com"
	}
	return &cobra.Command{
		Use:   verb + " DOMAIN",
		Short: fmt.Sprintf("Add DOMAIN to %s in the instance's policy.yaml (keeps its comments)", section),
		Long: fmt.Sprintf(`%s adds DOMAIN to the %s list of the instance's policy.yaml, which %s.
DOMAIN is an exact host, "*.example.com" for its subdomains (not the apex), or
either with a port ("localhost:8080"); without a port, 443 (and 80 for plain
HTTP) is meant (trusted: ignores the port). The file is rewritten atomically
with its comments kept; a running proxy reloads it within a second.`, verb, section, what),
		Example: ex,
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: a.withExistingInstance(func(cmd *cobra.Command, args []string, in instance.Instance) error {
			f := a.policyFile(in)
			edit := map[string]func(string) (string, bool, error){"allow": f.Allow, "deny": f.Deny, "trust": f.Trust}[verb]
			pattern, changed, err := edit(args[0])
			if err != nil {
				return err
			}
			if !changed {
				a.status("%s is already in %s of %s", pattern, section, in.Policy())
				return nil
			}
			a.status("added %s to %s in %s", pattern, section, in.Policy())
			return nil
		}),
	}
}

func newPolicyRmCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "rm DOMAIN",
		Short: "Remove DOMAIN from the instance's policy.yaml (undoes allow, deny or trust)",
		Long: `rm removes DOMAIN from the domains, deny and trusted lists of the instance's
policy.yaml, the way allow and deny add it: the file is rewritten atomically
with its comments kept, and a running proxy reloads it within a second.
DOMAIN is matched in canonical form ("API.Example.com." is api.example.com).
A DOMAIN the file does not list is exit 3; one allowed by the default policy
or a service stays allowed (hobbs policy check DOMAIN says by what).`,
		Example: "  hobbs policy rm api.example.com\n  hobbs policy rm '*.example.com'\n  hobbs policy rm localhost:8080",
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: a.withExistingInstance(func(cmd *cobra.Command, args []string, in instance.Instance) error {
			pattern, sections, err := a.policyFile(in).Remove(args[0])
			if err != nil {
				return err
			}
			a.status("removed %s from %s in %s", pattern, strings.Join(sections, " and "), in.Policy())
			return nil
		}),
	}
}
