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

// Dangling says, for each variable that still maps vault entry name after
// it was removed (or renamed to renamedTo), that hobbs run will fail and
// how to fix config.yaml.
func (c *Config) Dangling(name, renamedTo string) []string {
	var out []string
	for _, k := range c.VarsUsing(name) {
		key, to := "env."+k, VaultPrefix+renamedTo
		if _, bound := c.Secrets[k]; bound {
			key, to = "secrets."+k+".vault", renamedTo
		}
		fix := "store it again (hobbs vault set " + name + ") or change " + key + " in config.yaml"
		if renamedTo != "" {
			fix = "set " + key + " to " + to + " in config.yaml"
		}
		out = append(out, "config.yaml maps "+k+" to vault:"+name+", which is no longer in the vault: hobbs run will fail; "+fix)
	}
	return out
}
