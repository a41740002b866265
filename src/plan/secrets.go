package plan

import (
	"strings"

	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/playbook"
	"github.com/hobbs-agent/hobbs/src/policy"
)

// Secrets. A plan names the secrets a run gets, never their values: the
// variables config.yaml's env: maps (the agent gets each value) and those
// its secrets: binds to hosts (the agent gets a placeholder, the proxy the
// value, put in requests to those hosts only). A run: block narrows both
// to the secrets it names. Every binding is checked here, once, when the
// plan is made; the launcher decrypts exactly what the plan names.

// reservedEnv are variables the launcher sets; a vault mapping may not
// override them.
var reservedEnv = map[string]bool{"HOME": true, "USER": true, "PATH": true, "HOBBS_HOME": true, "HOBBS_CONTEXT": true,
	"HTTP_PROXY": true, "HTTPS_PROXY": true, "http_proxy": true, "https_proxy": true, "NO_PROXY": true,
	"no_proxy": true, "ALL_PROXY": true, "all_proxy": true, "CLAUDE_CONFIG_DIR": true,
	"SSL_CERT_FILE": true, "CURL_CA_BUNDLE": true, "REQUESTS_CA_BUNDLE": true, "GIT_SSL_CAINFO": true, "NODE_EXTRA_CA_CERTS": true}

// CheckSecretNames refuses vault-mapped names that would override what the
// launcher sets.
func CheckSecretNames(secrets []string) error {
	for _, kv := range secrets {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			return errs.Failf("vault env entry without a name")
		}
		if reservedEnv[name] {
			return errs.Usagef("config env maps %s, which hobbs run sets itself", name).Advise(ReservedSecret)
		}
	}
	return nil
}

// secrets picks the variables the run gets: all that config.yaml maps or
// binds, or, for a run: block, only those it names.
func (p *Plan) secrets(cfg *config.Config, grant *playbook.Allowance) error {
	keep := func(string) bool { return true }
	if grant != nil && grant.Declared {
		want := map[string]bool{}
		for _, n := range grant.Secrets {
			_, env := cfg.Env[n]
			_, bound := cfg.Secrets[n]
			if !env && !bound {
				return errs.Usagef("the run needs the secret %s, which config.yaml neither binds (secrets:) nor maps (env:)", n).
					Advise(UnknownSecret)
			}
			want[n] = true
		}
		keep = func(n string) bool { return want[n] }
	}
	var names []string
	for _, kv := range cfg.VaultEnv() {
		if keep(kv[0]) {
			p.Env = append(p.Env, EnvSecret{Name: kv[0], Vault: kv[1]})
			names = append(names, kv[0]+"=")
		}
	}
	for _, n := range cfg.BindingNames() {
		if !keep(n) {
			continue
		}
		b := cfg.Secrets[n]
		if err := b.Check(); err != nil {
			return errs.Usagef("config.yaml: secrets.%s.%v", n, err).
				Advise(BadBinding)
		}
		p.Secrets = append(p.Secrets, policy.Binding{Name: n, Vault: b.Vault, Hosts: append([]string{}, b.Hosts...),
			In: b.Positions(), Requests: append([]string(nil), b.Requests...), Kind: b.Kind})
		names = append(names, n+"=")
		if b.Kind == policy.KindAWSSigV4 {
			names = append(names, policy.AWSSecretKeyVar+"=")
		}
	}
	return CheckSecretNames(names)
}
