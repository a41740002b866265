package plan

import (
	"sort"
	"strings"

	"github.com/hobbs-agent/hobbs/src/playbook"
	"github.com/hobbs-agent/hobbs/src/policy"
)

// Session files. What a session must hand its containers but no one else may
// read — the vault-mapped variables, the proxy variables holding the token,
// the proxy's token — is never put in a container's environment: the engine
// keeps that in its container configuration (`docker inspect`, Docker's
// config.v2.json on disk). The launcher writes it instead to files in a
// directory of its own on a tmpfs, and bind-mounts each file read-only into
// the one container it is for, under SessionDir. The plan names each file,
// its container and what it holds (Plan.SessionFiles); the launcher writes
// them (its sessionfiles.go). The agent's entry point runs its command
// through `hobbs session-env`, which loads the variables; the proxy reads
// its token with --auth-token-file.
const (
	SessionDir         = "/run/hobbs-session"
	SessionEnvFile     = SessionDir + "/env"          // the agent's variables (JSON object)
	SessionTokenFile   = SessionDir + "/token"        // the proxy's token
	SessionSecretsFile = SessionDir + "/secrets"      // the proxy's: session CA with its key, bound secrets
	SessionCAFile      = SessionDir + "/ca.pem"       // the agent's: the session CA's certificate
	SessionUpstreamCA  = SessionDir + "/upstream.pem" // the proxy's: extra roots (EnvTestUpstreamCA)
	SessionPolicyFile  = SessionDir + "/policy.yaml"  // the proxy's: a headless run's own policy (Plan.Egress.Policy)
	// SessionPlaybookFile is the agent's, in a headless run of an approved
	// run: block: the playbook's text as checked against the approval.
	SessionPlaybookFile = SessionDir + "/playbook.md"
	SessionEventFile    = SessionDir + "/event.json" // the agent's, in a triggered run: the event (Trigger), named by EnvEvent
	// SessionAssetsDir is the agent's, in a headless run of an approved
	// run: block: a directory holding the skills (skills/NAME/) and
	// sub-agents (agents/NAME.md) the playbook names, as checked against
	// the approval (Plan.RunAssets), named by playbook.EnvRunAssets.
	SessionAssetsDir = SessionDir + "/assets"
	// SessionClaudeCredentials is the agent's, in a headless run: Claude
	// Code's sign-in read by the seed (ClaudeState), empty when there is
	// none; hobbs session-env copies it into the run's own state.
	SessionClaudeCredentials = SessionDir + "/claude-credentials.json"
)

// EnvTestUpstreamCA names a PEM file of roots the proxy trusts, besides the
// system's, for the hosts it intercepts. It exists for tests, whose HTTPS
// servers have certificates no public root signs; it is read on the host
// (never from the agent's reach) and handed to the proxy in a session file.
const EnvTestUpstreamCA = "HOBBS_TEST_UPSTREAM_CA"

// SessionFile is one file of the session's private directory.
type SessionFile struct {
	Name      string `json:"name"`
	Container string `json:"container"` // agent or proxy
	Target    string `json:"target"`
	Holds     string `json:"holds"`
}

// sessionFile is a session file mounted read-only into role's container,
// and noted in the plan's list.
func (p *Plan) sessionFile(name, target, role, holds string) Mount {
	p.SessionFiles = append(p.SessionFiles, SessionFile{Name: name, Container: role, Target: target, Holds: holds})
	return Mount{Type: MountSessionFile, Source: name, Target: target, ReadOnly: true}
}

// AgentEnv is the agent's session variables (SessionEnvFile), the one
// list of them: the proxy variables holding token, every env: variable
// with value(it), and every bound secret's variable (an aws-sigv4 key
// pair's two) with placeholder(its name). The plan shows them masked
// (AgentVars); the launcher writes them with the token, the values and
// the placeholders it made.
func (p *Plan) AgentEnv(token string, value func(EnvSecret) string, placeholder func(name string) string) []string {
	u := "http://" + TokenUser + ":" + token + "@" + RelayAddr
	vars := []string{"HTTP_PROXY=" + u, "HTTPS_PROXY=" + u, "http_proxy=" + u, "https_proxy=" + u}
	for _, e := range p.Env {
		vars = append(vars, e.Name+"="+value(e))
	}
	for _, b := range p.Secrets {
		vars = append(vars, b.Name+"="+placeholder(b.Name))
		if b.Kind == policy.KindAWSSigV4 {
			vars = append(vars, policy.AWSSecretKeyVar+"="+placeholder(policy.AWSSecretKeyVar))
		}
	}
	return vars
}

// shownAgentEnv is AgentEnv as the plan shows it: the token and every
// value masked.
func (p *Plan) shownAgentEnv() []string {
	return p.AgentEnv(shownToken, func(e EnvSecret) string { return "<vault:" + e.Vault + ">" },
		func(string) string { return "<placeholder>" })
}

// assetsHolds says what SessionAssetsDir holds: the skills and sub-agents
// by name, sorted; files nil, that nothing was checked against an
// approval (the playbook is not approved as it is).
func assetsHolds(files []playbook.AssetFile) string {
	seen := map[string]bool{}
	var names []string
	for _, f := range files {
		if n := f.Kind + " " + f.Name; !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	sort.Strings(names)
	what := "no instance skill or sub-agent (the playbook names none)"
	if files == nil {
		what = "none, as it is not approved as it is now (a run needs your approval first)"
	}
	if len(names) > 0 {
		what = strings.Join(names, ", ")
	}
	return "the approved copies of what the playbook names, the only instance skills and sub-agents the run links: " + what
}
