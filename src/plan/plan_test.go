package plan

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/layer"
	"github.com/hobbs-agent/hobbs/src/playbook"
	"github.com/hobbs-agent/hobbs/src/policy"
	"github.com/hobbs-agent/hobbs/src/provenance"
)

var update = flag.Bool("update", false, "rewrite the golden plans under testdata/plans")

// The host of the golden plans: fixed, so that a plan depends only on its
// config and spec.
func goldenHost() Host {
	return Host{Instance: "/home/ada/.local/share/hobbs", UID: 1000, GID: 1000, Workspace: "/home/ada/hobbs-workspace",
		Shares: instance.AgentShares(), Vault: true, RunVolume: "work-run-0a1b2c3d"}
}

const defaultPolicy = `services: [claude, github]
domains: []
deny: []
allow_private: []
`

func goldenPolicy(t *testing.T, instancePolicy string) *policy.Policy {
	t.Helper()
	def, err := policy.Parse("/etc/hobbs/policy.yaml", []byte(defaultPolicy))
	if err != nil {
		t.Fatal(err)
	}
	in, err := policy.Parse("policy.yaml", []byte(instancePolicy))
	if err != nil {
		t.Fatal(err)
	}
	return policy.Merge(def, in)
}

func goldenConfig(t *testing.T, yaml string) *config.Config {
	t.Helper()
	if yaml == "" {
		return config.Default()
	}
	cfg, err := config.Parse("config.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func goldenGrant(t *testing.T, pol *policy.Policy, stage string, run *playbook.Run) *playbook.Allowance {
	t.Helper()
	g, err := playbook.ComputeAllowance("weekly-invoices", "/home/ada/.local/share/hobbs/playbooks/weekly-invoices.md",
		playbook.Meta{Title: "Pay the weekly invoices", Stage: stage, Run: run}, pol)
	if err != nil {
		t.Fatal(err)
	}
	if run != nil {
		g.Text = []byte("---\ntitle: Pay the weekly invoices\n---\n# Pay the weekly invoices\n") // as approved
		// What the text names, as approved.
		g.Assets = []playbook.AssetFile{
			{Kind: "skill", Name: "bank-export", Path: "skills/bank-export/SKILL.md", Data: []byte("---\nname: bank-export\n---\n")},
			{Kind: "agent", Name: "ledger", Path: "agents/custom/ledger.md", Data: []byte("---\nname: ledger\n---\n")},
		}
	}
	return &g
}

const secretsConfig = `env:
  ANTHROPIC_API_KEY: vault:anthropic
secrets:
  GITHUB_TOKEN:
    vault: github
    hosts: [api.github.com]
  BANK_TOKEN:
    vault: bank
    hosts: ["api.bank.example"]
    in: [header, body]
    requests: ["POST /oauth/token"]
  AWS_ACCESS_KEY_ID:
    vault: aws
    kind: aws-sigv4
    hosts: ["*.amazonaws.com"]
`

// TestGoldenPlans pins the plans of representative runs: what each agent
// may do, whole. A change that widens one shows as a diff of its file
// under testdata/plans; go test ./src/plan -run TestGoldenPlans
// -update rewrites them after review.
func TestGoldenPlans(t *testing.T) {
	bankPolicy := "domains: [\"api.bank.example\", \"*.files.bank.example:8443\", \"news.example\"]\ndeny: [\"gist.github.com\"]\n"
	run := &playbook.Run{Hosts: []string{"api.bank.example", "*.files.bank.example:8443", "not-allowed.example"},
		Secrets: []string{"BANK_TOKEN"}, Tools: []string{"Read", "Bash(hobbs *)", "mcp__mail__send"}, MaxTurns: 30, Timeout: "20m", MaxCostUSD: 2.5}
	cases := []struct {
		name   string
		config string
		spec   func(t *testing.T) RunSpec
	}{
		{"session-defaults", "", func(t *testing.T) RunSpec {
			return RunSpec{Kind: KindSession, Name: "work", Image: "hobbs:local-1.0", TTY: true, Policy: goldenPolicy(t, "{}\n"), Host: goldenHost()}
		}},
		{"session-secrets", secretsConfig, func(t *testing.T) RunSpec {
			return RunSpec{Kind: KindSession, Name: "work", Image: "hobbs:local-1.0", Command: []string{"sh", "-c", "hobbs memory list"},
				Policy: goldenPolicy(t, "domains: [\"api.bank.example\"]\n"), Host: goldenHost()}
		}},
		{"session-rules-resources", "resources:\n  memory: 2g\n  pids: 300\n  cpus: \"1.5\"\negress_network: session\n", func(t *testing.T) RunSpec {
			h := goldenHost()
			h.WorkspaceGit = true
			return RunSpec{Kind: KindSession, Name: "work", Image: "hobbs:local-1.0", TTY: true,
				Policy: goldenPolicy(t, "domains: [\"api.example.com\"]\nrules:\n  api.example.com: [\"allow GET /v1/\", \"deny *\"]\n"), Host: h}
		}},
		{"session-podman", "engine: podman\n", func(t *testing.T) RunSpec {
			h := goldenHost()
			h.Podman, h.Vault = true, false
			h.Shares = h.Shares[4:] // no foundation.md, claude.md, config.yaml, policy.yaml
			return RunSpec{Kind: KindSession, Name: "work", Image: "hobbs:local-1.0", TTY: true, Policy: goldenPolicy(t, "{}\n"), Host: h}
		}},
		{"session-layers", "", func(t *testing.T) RunSpec {
			h := goldenHost()
			h.Layers = layer.Overlay
			return RunSpec{Kind: KindSession, Name: "work", Image: "hobbs:local-1.0", TTY: true, Policy: goldenPolicy(t, "{}\n"), Host: h}
		}},
		{"session-podman-layers", "engine: podman\n", func(t *testing.T) RunSpec {
			h := goldenHost()
			h.Podman, h.Vault, h.Layers = true, false, layer.Copy
			return RunSpec{Kind: KindSession, Name: "work", Image: "hobbs:local-1.0", TTY: true, Policy: goldenPolicy(t, "{}\n"), Host: h}
		}},
		{"playbook-run-block", secretsConfig, func(t *testing.T) RunSpec {
			pol := goldenPolicy(t, bankPolicy)
			return RunSpec{Kind: KindPlaybook, Name: "work", Image: "hobbs:local-1.0", Policy: pol, Host: goldenHost(),
				Playbook: goldenGrant(t, pol, "supervised", run)}
		}},
		{"playbook-defaults", secretsConfig, func(t *testing.T) RunSpec {
			pol := goldenPolicy(t, bankPolicy)
			return RunSpec{Kind: KindPlaybook, Name: "work", Image: "hobbs:local-1.0", Policy: pol, Host: goldenHost(),
				Playbook: goldenGrant(t, pol, "supervised", nil)}
		}},
		{"chat-turn", secretsConfig, func(t *testing.T) RunSpec {
			return RunSpec{Kind: KindChat, Name: "work", Image: "hobbs:local-1.0", TTY: true, Policy: goldenPolicy(t, bankPolicy), Host: goldenHost(),
				Chat: &ChatSpec{Conversation: "telegram-4242"}}
		}},
		{"scheduled-no-hosts", secretsConfig, func(t *testing.T) RunSpec {
			pol := goldenPolicy(t, bankPolicy+"rules:\n  api.bank.example: [\"allow GET /statements/\"]\n")
			return RunSpec{Kind: KindScheduled, Name: "work", Image: "hobbs:local-1.0", Policy: pol, Host: goldenHost(),
				Playbook: goldenGrant(t, pol, "autonomous", &playbook.Run{Hosts: []string{}, Secrets: []string{}, Tools: []string{}})}
		}},
		{"session-hold", "egress:\n  hold: 90s\n", func(t *testing.T) RunSpec {
			return RunSpec{Kind: KindSession, Name: "work", Image: "hobbs:local-1.0", TTY: true, Policy: goldenPolicy(t, "{}\n"), Host: goldenHost()}
		}},
		{"trigger-hold", secretsConfig + "egress:\n  hold: 2m\n", func(t *testing.T) RunSpec {
			pol := goldenPolicy(t, bankPolicy)
			return RunSpec{Kind: KindTrigger, Name: "work", Image: "hobbs:local-1.0", Policy: pol, Host: goldenHost(),
				Playbook: goldenGrant(t, pol, "supervised", run),
				Trigger:  &Trigger{Name: "new-issues", Source: "github", Event: []byte(`{"event":"issues"}`)}}
		}},
		{"trigger-run-block", secretsConfig, func(t *testing.T) RunSpec {
			pol := goldenPolicy(t, bankPolicy)
			return RunSpec{Kind: KindTrigger, Name: "work", Image: "hobbs:local-1.0", Policy: pol, Host: goldenHost(),
				Playbook: goldenGrant(t, pol, "supervised", run),
				Trigger:  &Trigger{Name: "new-issues", Source: "github", Event: []byte(`{"event":"issues"}`)}}
		}},
		{"mail-run-block", secretsConfig, func(t *testing.T) RunSpec {
			pol := goldenPolicy(t, bankPolicy)
			return RunSpec{Kind: KindTrigger, Name: "work", Image: "hobbs:local-1.0", Policy: pol, Host: goldenHost(),
				Playbook: goldenGrant(t, pol, "supervised", run),
				Trigger: &Trigger{Name: "inbox", Source: "imap", Event: []byte(`{"event":"message"}`),
					Attachments: map[string][]byte{"01-invoice.pdf": []byte("%PDF"), "../escape": []byte("x")}}}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := New(goldenConfig(t, c.config), c.spec(t))
			if err != nil {
				t.Fatal(err)
			}
			// As hobbs run --plan --json prints it.
			var jb bytes.Buffer
			enc := json.NewEncoder(&jb)
			enc.SetIndent("", "  ")
			enc.SetEscapeHTML(false)
			if err := enc.Encode(p); err != nil {
				t.Fatal(err)
			}
			js := jb.Bytes()
			var txt bytes.Buffer
			if err := p.WriteSummary(&txt); err != nil {
				t.Fatal(err)
			}
			for ext, got := range map[string][]byte{".json": js, ".txt": txt.Bytes()} {
				path := filepath.Join("testdata", "plans", c.name+ext)
				if *update {
					if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(path, got, 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (go test ./src/plan -run TestGoldenPlans -update writes it)", err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("the plan differs from %s; review the diff, then -update:\n%s", path, lineDiff(string(want), string(got)))
				}
			}
		})
	}
}

// lineDiff shows the lines of want and got that differ, in order.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			b.WriteString("- " + wl + "\n+ " + gl + "\n")
		}
	}
	return b.String()
}

// The invariants every plan keeps, whatever its spec: checked here on the
// golden specs, so that an -update cannot quietly accept a broken one.
func TestPlanInvariants(t *testing.T) {
	pol := goldenPolicy(t, "domains: [\"api.bank.example\"]\n")
	cfg := goldenConfig(t, secretsConfig)
	run := &playbook.Run{Hosts: []string{"api.bank.example"}, Secrets: []string{"BANK_TOKEN"}, Tools: []string{"Read"}, Timeout: "5m"}
	podman := goldenHost()
	podman.Podman = true
	specs := []RunSpec{
		{Kind: KindSession, Name: "a", Image: "i", Policy: pol, Host: goldenHost()},
		{Kind: KindPlaybook, Name: "b", Image: "i", Policy: pol, Host: goldenHost(), Playbook: goldenGrant(t, pol, "supervised", run)},
		{Kind: KindPlaybook, Name: "c", Image: "i", Policy: pol, Host: goldenHost(), Playbook: goldenGrant(t, pol, "supervised", nil)},
		{Kind: KindScheduled, Name: "d", Image: "i", Policy: pol, Host: podman, Playbook: goldenGrant(t, pol, "autonomous", run)},
		{Kind: KindChat, Name: "e", Image: "i", TTY: true, Policy: pol, Host: goldenHost(), Chat: &ChatSpec{Conversation: "c1"}},
		{Kind: KindChat, Name: "f", Image: "i", Policy: pol, Host: podman, Chat: &ChatSpec{Conversation: "c2", MaxTurns: 3, Timeout: time.Minute}},
		{Kind: KindTrigger, Name: "e", Image: "i", Policy: pol, Host: goldenHost(), Playbook: goldenGrant(t, pol, "supervised", run),
			Trigger: &Trigger{Name: "t", Source: "github", Event: []byte("{}")}},
	}
	for _, spec := range specs {
		p, err := New(cfg, spec)
		if err != nil {
			t.Fatal(err)
		}
		js, _ := json.Marshal(p)
		for _, c := range []Container{p.Agent, p.Proxy} {
			if c.User != "1000:1000" || len(c.CapDrop) != 1 || c.CapDrop[0] != "ALL" || !c.Init ||
				c.SecurityOpt[0] != "no-new-privileges" || !strings.HasPrefix(c.SecurityOpt[1], "seccomp=") {
				t.Errorf("%s %s: hardening %+v", spec.Kind, c.Role, c)
			}
			for _, e := range c.Env {
				if strings.Contains(e, "TOKEN") || strings.Contains(e, "PROXY=http") {
					t.Errorf("%s %s: a secret's variable in the container's configuration: %s", spec.Kind, c.Role, e)
				}
			}
		}
		if p.Agent.Network != "none" {
			t.Errorf("%s: agent network %q", spec.Kind, p.Agent.Network)
		}
		for _, m := range p.Agent.Mounts {
			// Every host directory the agent writes is under the disk watch.
			if p.DiskWatch.MinFree > 0 && m.Type == MountBind && !m.ReadOnly && !slices.Contains(p.DiskWatch.Paths, m.Source) {
				t.Errorf("%s: the agent writes %s, which the disk watch does not cover (%v)", spec.Kind, m.Source, p.DiskWatch.Paths)
			}
			if m.Source == p.Instance || strings.HasPrefix(m.Source, p.Instance+"/vault") || strings.HasPrefix(m.Source, p.Instance+"/grants") ||
				m.Source == p.Instance+"/logs" || strings.HasPrefix(m.Source, p.Instance+"/logs/egress") {
				t.Errorf("%s: the agent mounts %s", spec.Kind, m.Source)
			}
			for _, ro := range []string{"/config.yaml", "/policy.yaml", "/foundation.md", "/claude.md"} {
				if strings.HasSuffix(m.Source, ro) && !m.ReadOnly {
					t.Errorf("%s: %s is writable", spec.Kind, m.Source)
				}
			}
		}
		p.checkClaudeState(t)
		// An approved run links only the approved copies it is handed, read-only.
		approved := spec.Playbook != nil && spec.Playbook.Text != nil
		hasAssets := slices.Contains(p.Agent.Env, playbook.EnvRunAssets+"="+SessionAssetsDir)
		mounted := false
		for _, m := range p.Agent.Mounts {
			if m.Target == SessionAssetsDir {
				mounted = true
				if m.Type != MountSessionFile || !m.ReadOnly || !hasAssets {
					t.Errorf("%s: the run's approved copies are mounted as %+v (variable set: %v)", spec.Kind, m, hasAssets)
				}
			}
		}
		if hasAssets != approved || mounted != approved || approved && len(p.RunAssets) != len(spec.Playbook.Assets) {
			t.Errorf("%s: approved %v, gets approved copies %v (%d files)", spec.Kind, approved, hasAssets, len(p.RunAssets))
		}
		if spec.Kind == KindPlaybook && spec.Playbook.Declared {
			if len(p.Env) != 0 || len(p.Secrets) != 1 || p.Secrets[0].Name != "BANK_TOKEN" {
				t.Errorf("a run: block naming BANK_TOKEN gets env %v, secrets %v", p.Env, p.Secrets)
			}
			if p.Egress.PolicyFiles[0] != SessionPolicyFile || strings.Contains(p.Egress.Policy, "github") {
				t.Errorf("a run: block's proxy policy: %v\n%s", p.Egress.PolicyFiles, p.Egress.Policy)
			}
			if p.Timeout != 5*time.Minute {
				t.Errorf("timeout %v", p.Timeout)
			}
		}
		if spec.Kind == KindChat {
			p.checkChat(t, cfg, spec)
		}
		if g := spec.Playbook; g != nil && g.Declared {
			// An approved run: block's run gets the text as checked,
			// read-only, and show names it (playbook.EnvRunPlaybookFile).
			var ro bool
			for _, m := range p.Agent.Mounts {
				ro = ro || (m.Target == SessionPlaybookFile && m.ReadOnly && m.Type == MountSessionFile)
			}
			if !ro || string(p.PlaybookText) != string(g.Text) || !slices.Contains(p.Agent.Env, playbook.EnvRunPlaybookFile+"="+SessionPlaybookFile) ||
				!slices.Contains(p.Agent.Env, playbook.EnvRunPlaybook+"="+g.Playbook) {
				t.Errorf("%s: the approved text is not the run's read-only copy: %v", spec.Kind, p.Agent.Env)
			}
		}
		if strings.Contains(string(js), "<vault:github>") && spec.Kind == KindPlaybook {
			t.Errorf("a playbook run's plan names a secret its block does not")
		}
	}
}

// checkClaudeState checks what every plan keeps of Claude Code's state: a
// session mounts the instance's state volume writable and nothing else of
// it; a headless run never mounts it writable in any container, has a
// fresh directory of its own, the framework skills' allow rules covered,
// its sign-in from a seed that mounts the volume read-only and has no
// network, and a command line that loads no workspace settings, asks no
// one, reports JSON and saves no session.
func (p *Plan) checkClaudeState(t *testing.T) {
	t.Helper()
	vol := p.Claude.State.Volume
	var volMounts []Mount
	for _, c := range []*Container{&p.Agent, &p.Proxy, p.Seed} {
		if c == nil {
			continue
		}
		for _, m := range c.Mounts {
			if m.Type == MountVolume && m.Source == vol {
				volMounts = append(volMounts, m)
				if p.Kind != KindSession && (!m.ReadOnly || c.Role != RoleSeed) {
					t.Errorf("%s: the %s container mounts the shared Claude state volume %s (read-only %v)", p.Kind, c.Role, vol, m.ReadOnly)
				}
			}
		}
	}
	if p.Kind == KindSession {
		if len(volMounts) != 1 || volMounts[0].ReadOnly || volMounts[0].Target != ClaudeDir || p.Seed != nil || p.Claude.State.Fresh {
			t.Errorf("session: the state volume is not its Claude Code state: %+v", volMounts)
		}
		return
	}
	st := p.Claude.State
	if !st.Fresh || p.Seed == nil || len(volMounts) != 1 || p.Seed.Network != "none" || p.Seed.Remove ||
		len(p.Seed.CapDrop) != 1 || p.Seed.User != p.Agent.User || strings.Join(p.Create.Seed, " ") == "" || p.Create.Seed[0] != "create" ||
		p.Seed.Entrypoint != "true" || len(p.Seed.Command) != 0 {
		t.Errorf("%s: no fresh state with a hardened, read-only seed: %+v %+v", p.Kind, st, p.Seed)
	}
	tmpfs := strings.Join(p.Agent.Tmpfs, " ") + " "
	owner := map[bool]string{false: ",uid=1000,gid=1000", true: ",U"}[p.Podman]
	if !strings.Contains(tmpfs, ClaudeDir+":rw,") || !strings.Contains(tmpfs, owner+" ") {
		t.Errorf("%s: agent tmpfs %q lacks the fresh state", p.Kind, p.Agent.Tmpfs)
	}
	// A playbook run gets only its block's tools: the framework skills'
	// allow rules are covered. A chat turn keeps a session's.
	if covered := strings.Contains(tmpfs, ManagedSettingsDir+":ro,"); covered != (p.Kind != KindChat) {
		t.Errorf("%s: the managed allow rules covered: %v (tmpfs %q)", p.Kind, covered, p.Agent.Tmpfs)
	}
	if !p.hasAgentMount(SessionClaudeCredentials) {
		t.Errorf("%s: no sign-in session file", p.Kind)
	}
	cmd := strings.Join(p.Claude.Command, " ")
	if p.Kind == KindChat {
		if !strings.Contains(cmd, "-p "+ChatPrompt+" ") {
			t.Errorf("chat: the prompt is not the fixed one: %s", cmd)
		}
	} else if pr := p.Claude.Command[2]; p.Claude.Command[1] != "-p" || strings.Fields(pr)[0] != "/run-playbook" || strings.Fields(pr)[1] != p.Playbook {
		// The prompt runs the skill on the playbook: its first word is the
		// playbook's name, whatever a triggered run's prompt adds after it.
		t.Errorf("%s: the prompt %q does not run the skill on %s", p.Kind, pr, p.Playbook)
	}
	if p.Kind == KindTrigger {
		p.checkTrigger(t)
	}
	for _, want := range []string{"--permission-mode dontAsk", "--output-format json",
		"--no-session-persistence", "--setting-sources user", "--strict-mcp-config", "--max-turns "} {
		if !strings.Contains(cmd, want) {
			t.Errorf("%s: the command line lacks %q: %s", p.Kind, want, cmd)
		}
	}
}

// A run: block naming a secret config.yaml lacks, and a config mapping a
// variable the launcher sets, are refused when the plan is made.
func TestPlanRefusesUnknownAndReservedSecrets(t *testing.T) {
	pol := goldenPolicy(t, "{}\n")
	run := &playbook.Run{Hosts: []string{}, Secrets: []string{"NOPE"}, Tools: []string{}}
	_, err := New(goldenConfig(t, secretsConfig), RunSpec{Kind: KindPlaybook, Name: "a", Image: "i", Policy: pol, Host: goldenHost(),
		Playbook: goldenGrant(t, pol, "supervised", run)})
	if err == nil || !strings.Contains(err.Error(), "NOPE") {
		t.Errorf("unknown run secret: %v", err)
	}
	_, err = New(goldenConfig(t, "env:\n  HTTPS_PROXY: vault:x\n"), RunSpec{Kind: KindSession, Name: "a", Image: "i", Policy: pol, Host: goldenHost()})
	if err == nil || !strings.Contains(err.Error(), "HTTPS_PROXY") {
		t.Errorf("reserved env name: %v", err)
	}
}

// hasAgentMount reports whether the agent mounts something at target.
func (p *Plan) hasAgentMount(target string) bool {
	for _, m := range p.Agent.Mounts {
		if m.Target == target {
			return true
		}
	}
	return false
}

// checkChat checks what a chat turn's plan keeps: the interactive
// session's privileges (every secret config.yaml maps or binds, the
// instance's policy files), no terminal, a time limit, every MCP tool
// denied, and the owner's text on no command line (the prompt is fixed;
// the conversation is on standard input).
func (p *Plan) checkChat(t *testing.T, cfg *config.Config, spec RunSpec) {
	t.Helper()
	session, err := New(cfg, RunSpec{Kind: KindSession, Name: spec.Name, Image: spec.Image, Policy: spec.Policy, Host: spec.Host})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Egress.PolicyFiles, session.Egress.PolicyFiles) || p.Egress.Policy != "" ||
		!slices.Equal(p.Egress.Domains, session.Egress.Domains) || !slices.Equal(p.Egress.Intercepted, session.Egress.Intercepted) {
		t.Errorf("chat: egress %+v, want the session's %+v", p.Egress, session.Egress)
	}
	if !slices.Equal(p.AgentVars, session.AgentVars) || len(p.Secrets) != len(session.Secrets) || len(p.Env) != len(session.Env) {
		t.Errorf("chat: secrets %v, want the session's %v", p.AgentVars, session.AgentVars)
	}
	if p.Agent.TTY || slices.Contains(p.Create.Agent, "-t") || p.Timeout <= 0 || p.Conversation != spec.Chat.Conversation {
		t.Errorf("chat: tty %v, timeout %v, conversation %q", p.Agent.TTY, p.Timeout, p.Conversation)
	}
	if spec.Chat.Timeout > 0 && p.Timeout != spec.Chat.Timeout || spec.Chat.MaxTurns > 0 && p.Claude.MaxTurns != spec.Chat.MaxTurns {
		t.Errorf("chat: limits %v %d, want the spec's %+v", p.Timeout, p.Claude.MaxTurns, spec.Chat)
	}
	if !slices.Equal(p.Claude.DisallowedTools, []string{"mcp__*"}) || p.Claude.AllowedTools != nil || p.Claude.Input == "" ||
		!slices.Contains(p.Claude.Settings, ManagedSettingsDir) {
		t.Errorf("chat: claude %+v", p.Claude)
	}
	if n := len(p.Claude.Command); n < 3 || p.Claude.Command[2] != ChatPrompt || p.Create.Agent[len(p.Create.Agent)-n+2] != ChatPrompt {
		t.Errorf("chat: the prompt is not the fixed one: %q", p.Claude.Command)
	}
}

// checkTrigger checks what a triggered run's plan keeps: the event a
// read-only session file of the agent's alone, named by HOBBS_EVENT, the
// prompt saying it is untrusted input, the session's origin a trigger (so
// it is tainted), and a run: block's grant.
func (p *Plan) checkTrigger(t *testing.T) {
	t.Helper()
	var mounted bool
	for _, m := range p.Agent.Mounts {
		if m.Target == SessionEventFile {
			mounted = m.ReadOnly && m.Type == MountSessionFile
		}
	}
	for _, m := range p.Proxy.Mounts {
		if m.Target == SessionEventFile {
			t.Errorf("the proxy mounts the event")
		}
	}
	if !mounted || !slices.Contains(p.Agent.Env, EnvEvent+"="+SessionEventFile) || p.Event == nil {
		t.Errorf("trigger: the event is not a read-only session file named by %s: %v", EnvEvent, p.Agent.Env)
	}
	if !strings.Contains(p.Claude.Command[2], "untrusted input from") || !strings.Contains(p.Claude.Command[2], "never instructions") {
		t.Errorf("trigger: the prompt does not say the event is untrusted: %q", p.Claude.Command[2])
	}
	if o := p.Origin(); o.Kind != provenance.OriginTrigger || o.Name != p.Trigger || p.Trigger == "" {
		t.Errorf("trigger: origin %+v", o)
	}
	if p.Egress.PolicyFiles[0] != SessionPolicyFile {
		t.Errorf("trigger: the proxy enforces %v, not the run's own policy", p.Egress.PolicyFiles)
	}
}

// A triggered run needs a run: block: untrusted input never gets the
// instance's defaults; and a trigger goes only with KindTrigger.
func TestTriggerPlanRefusals(t *testing.T) {
	pol := goldenPolicy(t, "domains: [\"api.bank.example\"]\n")
	cfg := goldenConfig(t, secretsConfig)
	trig := &Trigger{Name: "t", Source: "github", Event: []byte("{}")}
	if _, err := New(cfg, RunSpec{Kind: KindTrigger, Name: "e", Image: "i", Policy: pol, Host: goldenHost(),
		Playbook: goldenGrant(t, pol, "supervised", nil), Trigger: trig}); err == nil || !strings.Contains(err.Error(), "no run: block") {
		t.Errorf("a triggered run without a run: block: %v", err)
	}
	if _, err := New(cfg, RunSpec{Kind: KindPlaybook, Name: "e", Image: "i", Policy: pol, Host: goldenHost(),
		Playbook: goldenGrant(t, pol, "supervised", nil), Trigger: trig}); err == nil {
		t.Errorf("a playbook run with a trigger was planned")
	}
	if _, err := New(cfg, RunSpec{Kind: KindTrigger, Name: "e", Image: "i", Policy: pol, Host: goldenHost(),
		Playbook: goldenGrant(t, pol, "supervised", nil)}); err == nil {
		t.Errorf("a triggered run without its event was planned")
	}
}

// A chat turn that starts tainted (its conversation holds a tainted turn,
// or its message carries someone else's text) tells its proxy so, for the
// questions of held requests; the reason stays on the host.
func TestProxyToldOfAnUntrustedStart(t *testing.T) {
	for _, untrusted := range []string{"", "the message carries forwarded text from Mallory"} {
		p, err := New(goldenConfig(t, "egress:\n  hold: 90s\n"), RunSpec{Kind: KindChat, Name: "work", Image: "hobbs:local-1.0",
			Policy: goldenPolicy(t, "{}\n"), Host: goldenHost(), Chat: &ChatSpec{Conversation: "telegram-4242", Untrusted: untrusted}})
		if err != nil {
			t.Fatal(err)
		}
		args := strings.Join(p.Proxy.Command, " ")
		if got := strings.Contains(args, "--untrusted"); got != (untrusted != "") {
			t.Errorf("untrusted %q: proxy command %q: --untrusted %v", untrusted, args, got)
		}
		if strings.Contains(args, "Mallory") {
			t.Errorf("the proxy's command carries the reason: %q", args)
		}
	}
}
