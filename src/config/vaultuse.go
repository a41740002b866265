package config

import (
	"strings"

	"github.com/hobbs-agent/hobbs/src/policy"
)

// Use is one variable config.yaml gives a vault entry to: bound to hosts
// (secrets:, the agent holds a placeholder) or in the agent's environment
// (env:).
type Use struct {
	Variable string   `json:"variable"`
	How      string   `json:"how"` // "bound" or "env"
	Hosts    []string `json:"hosts,omitempty"`
	// In and Requests say where in requests to Hosts a bound value goes
	// (Binding.Where).
	In       []string `json:"in,omitempty"`
	Requests []string `json:"requests,omitempty"`
	Kind     string   `json:"kind,omitempty"`
}

// String is how hobbs vault list shows u: "VAR → host,host in header" or
// "VAR (env)".
func (u Use) String() string {
	if u.How == "bound" {
		return u.Variable + " → " + strings.Join(u.Hosts, ",") + " " + policy.Binding{In: u.In, Requests: u.Requests, Kind: u.Kind}.Where()
	}
	return u.Variable + " (env)"
}

// Uses returns the variables using vault entry name: the bound ones, then
// the env ones, each sorted by name; never nil.
func (c *Config) Uses(name string) []Use {
	out := []Use{}
	for _, v := range c.BindingNames() {
		if b := c.Secrets[v]; b.Vault == name {
			out = append(out, Use{Variable: v, How: "bound", Hosts: b.Hosts, In: b.Positions(), Requests: b.Requests, Kind: b.Kind})
		}
	}
	for _, m := range c.VaultEnv() {
		if m[1] == name {
			out = append(out, Use{Variable: m[0], How: "env"})
		}
	}
	return out
}

// DanglingUse is a variable config.yaml maps to a vault entry that is no
// longer in the vault: a run fails until the mapping changes.
type DanglingUse struct {
	Variable string // the variable (env: or secrets:)
	Key      string // where config.yaml maps it: env.NAME or secrets.NAME.vault
	To       string // what Key takes to follow a renamed entry; "" when it was removed
}

// Dangling lists each variable that still maps vault entry name after it
// was removed (or renamed to renamedTo), with the key of config.yaml to
// change.
func (c *Config) Dangling(name, renamedTo string) []DanglingUse {
	var out []DanglingUse
	for _, k := range c.VarsUsing(name) {
		d := DanglingUse{Variable: k, Key: "env." + k}
		if renamedTo != "" {
			d.To = VaultPrefix + renamedTo
		}
		if _, bound := c.Secrets[k]; bound {
			d.Key, d.To = "secrets."+k+".vault", renamedTo
		}
		out = append(out, d)
	}
	return out
}
