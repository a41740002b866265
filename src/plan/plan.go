package plan

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/layer"
	"github.com/hobbs-agent/hobbs/src/playbook"
	"github.com/hobbs-agent/hobbs/src/policy"
	"github.com/hobbs-agent/hobbs/src/provenance"
)

// Kind says who starts a run.
type Kind string

// The kinds of run. A new way to start an agent (a webhook, a chat turn) is
// a new Kind and a RunSpec of its own, never code that assembles containers.
const (
	KindSession   Kind = "session"   // hobbs run: the user's terminal, or --detach
	KindPlaybook  Kind = "playbook"  // hobbs playbook run: headless, started by the user
	KindScheduled Kind = "scheduled" // hobbs playbook run --scheduled: headless, started by a timer
	KindChat      Kind = "chat"      // one turn of the owner's conversation from a channel: headless (chat.go)
	KindTrigger   Kind = "trigger"   // hobbs serve: headless, started by a signed webhook (Trigger)
)

// RunSpec says who starts a run and for what; with config.yaml it is all
// a plan is made from.
type RunSpec struct {
	Kind    Kind     `json:"kind"`
	Name    string   `json:"name"`    // the session's name (ValidName)
	Image   string   `json:"image"`   // the image to run (image.ImageRef)
	Command []string `json:"command"` // KindSession: the agent's command; empty: claude
	TTY     bool     `json:"tty"`     // the agent gets a terminal
	// Playbook is a headless run's approved allowance (KindPlaybook,
	// KindScheduled, KindTrigger): its hosts, secrets, tools and limits.
	Playbook *playbook.Allowance `json:"playbook,omitempty"`
	// Chat is a chat turn's conversation and limits (KindChat).
	Chat *ChatSpec `json:"chat,omitempty"`
	// Trigger is a triggered run's event (KindTrigger).
	Trigger *Trigger `json:"trigger,omitempty"`
	// Policy is the instance's effective egress policy (the image's default
	// and policy.yaml): shown in the plan, and what a headless run's own
	// policy is narrowed from.
	Policy *policy.Policy `json:"-"`
	// Host holds the facts of the host the plan needs (Survey).
	Host Host `json:"host"`
}

// Trigger is what started a triggered run: the trigger's name (config
// triggers:), its source (github, gitlab, generic) and the event,
// normalised JSON (serve.Event), which the agent reads from a session file
// named by $HOBBS_EVENT. Everything in the event is untrusted input from
// the source; the run's prompt says so, and the session is tainted
// (provenance.OriginTrigger).
type Trigger struct {
	Name   string `json:"name"`
	Source string `json:"source"`
	Event  []byte `json:"-"`
	// Attachments are a mail's attached files (source imap), by their
	// safe names: read-only files under SessionAttachmentDir.
	Attachments map[string][]byte `json:"-"`
}

// Host is what New needs to know of the host: found and checked by
// Survey, or set by hand in tests.
type Host struct {
	Instance     string           `json:"instance"` // the instance root
	UID          int              `json:"uid"`
	GID          int              `json:"gid"`
	Podman       bool             `json:"podman"`        // the engine is podman
	Workspace    string           `json:"workspace"`     // absolute, links resolved
	WorkspaceGit bool             `json:"workspace_git"` // its .git is a directory to mount read-only
	Shares       []instance.Share `json:"shares"`        // the agent shares that exist, sources checked
	Vault        bool             `json:"vault"`         // the instance has a vault/ to cover in the proxy's view
	UpstreamCA   bool             `json:"upstream_ca"`   // tests: extra roots for the proxy (EnvTestUpstreamCA)
	RunVolume    string           `json:"run_volume"`    // the socket volume's name (RunVolume)
	// Layers is how the written shares reach the agent (layers.go): "" for
	// bound as they are.
	Layers layer.Mode `json:"layers,omitempty"`
}

// Plan is one run, whole.
type Plan struct {
	Kind     Kind   `json:"kind"`
	Session  string `json:"session"`
	Playbook string `json:"playbook,omitempty"`
	// Conversation is a chat turn's conversation (KindChat).
	Conversation string `json:"conversation,omitempty"`
	// Untrusted says why a chat turn is tainted from its start
	// (ChatSpec.Untrusted).
	Untrusted string `json:"untrusted,omitempty"`
	Trigger   string `json:"trigger,omitempty"` // a triggered run's trigger (KindTrigger)
	Image     string `json:"image"`
	Instance  string `json:"instance"`
	Workspace string `json:"workspace"`
	// WorkspaceGitReadOnly: the workspace's .git is mounted read-only.
	WorkspaceGitReadOnly bool      `json:"workspace_git_readonly"`
	Agent                Container `json:"agent"`
	Proxy                Container `json:"proxy"`
	Egress               Egress    `json:"egress"`
	// Env are the config.yaml env: variables the agent gets with their
	// values (from the vault); Secrets the variables bound to hosts, whose
	// values only the proxy gets.
	Env     []EnvSecret      `json:"env"`
	Secrets []policy.Binding `json:"secrets"`
	// AgentVars are the agent's session variables (SessionEnvFile), as
	// shown: the token and every value masked.
	AgentVars []string `json:"agent_vars"`
	// SessionFiles are the files of the session's private directory and
	// the container each is mounted into.
	SessionFiles []SessionFile `json:"session_files"`
	// Layers are the session's private layers over the shares it writes
	// (layers.go).
	Layers []LayerMount `json:"layers,omitempty"`
	// StateListing is where, relative to the instance, the proxy lists
	// the Claude state volume at its stop when the launcher asks (a
	// layered session with the volume: the launcher holds a tainted
	// session's user-scope changes from that listing); "" for none.
	StateListing string `json:"state_listing,omitempty"`
	Claude       Claude `json:"claude"`
	// Seed is the container a headless run copies Claude Code's sign-in
	// out of (the state volume mounted read-only; created, never started:
	// see ClaudeState); nil for a session.
	Seed *Container `json:"seed,omitempty"`
	// Create are the containers' create commands as the engine gets them,
	// but for the session's private directory and the owner label.
	Create struct {
		Agent []string `json:"agent"`
		Proxy []string `json:"proxy"`
		Seed  []string `json:"seed,omitempty"`
	} `json:"create"`
	// DiskWatch is what the launcher watches while the run is live: it
	// stops the run before the disk holding the agent's writes fills.
	DiskWatch DiskWatch `json:"disk_watch"`
	// Timeout stops the run (exit 124); 0: none.
	Timeout time.Duration `json:"-"`
	// TimeoutText is Timeout as text, for JSON ("" for none).
	TimeoutText string `json:"timeout,omitempty"`

	// What carrying the plan out needs beyond what the plan shows; never
	// a secret's value.
	UID, GID  int    `json:"-"`
	Podman    bool   `json:"-"` // the engine is podman
	RunVolume string `json:"-"` // the socket volume's name
	// ProxyPolicy is a headless run's own policy file (Egress.Policy),
	// Event a triggered run's event, PlaybookText a headless run's
	// playbook as approved (playbook.Allowance.Text): each the content of
	// a session file.
	ProxyPolicy  []byte `json:"-"`
	Event        []byte `json:"-"`
	PlaybookText []byte `json:"-"`
	// RunAssets are the files of the skills and sub-agents an approved
	// run gets, as checked against the approval
	// (playbook.Allowance.Assets): the content of the session directory
	// SessionAssetsDir.
	RunAssets []playbook.AssetFile `json:"-"`
	// Attachments are a mail run's attached files (Trigger.Attachments).
	Attachments map[string][]byte `json:"-"`
	// Mail: the run was started by a mail message (origin mail).
	Mail bool `json:"mail,omitempty"`

	instance instance.Instance
}

// In is the instance the plan's run works on.
func (p *Plan) In() instance.Instance { return p.instance }

// Container is one container's configuration, rendered into the engine's
// create command by args.
type Container struct {
	Name        string    `json:"name"` // "": the engine names it
	Role        string    `json:"role"`
	Hostname    string    `json:"hostname"`
	User        string    `json:"user"`
	Network     string    `json:"network"` // "none"; "" for the engine's default
	CapDrop     []string  `json:"cap_drop"`
	SecurityOpt []string  `json:"security_opt"`
	Init        bool      `json:"init"`
	Userns      string    `json:"userns,omitempty"`
	Remove      bool      `json:"remove"` // --rm
	Interactive bool      `json:"interactive"`
	TTY         bool      `json:"tty"`
	StopSignal  string    `json:"stop_signal,omitempty"`
	Resources   Resources `json:"resources"`
	Labels      []string  `json:"labels"` // key=value
	Env         []string  `json:"env"`    // in the container's configuration: never a secret
	Mounts      []Mount   `json:"mounts"`
	Tmpfs       []string  `json:"tmpfs,omitempty"`
	Workdir     string    `json:"workdir,omitempty"`
	Entrypoint  string    `json:"entrypoint,omitempty"`
	Image       string    `json:"image"`
	Command     []string  `json:"command"`
}

// Resources are a container's limits ("" or 0: none).
type Resources struct {
	PIDs   int    `json:"pids,omitempty"`
	Memory string `json:"memory,omitempty"`
	CPUs   string `json:"cpus,omitempty"`
}

// Mount kinds.
const (
	MountBind        = "bind"         // a host path, its source checked (Survey)
	MountVolume      = "volume"       // an engine volume
	MountSessionFile = "session-file" // a file of the session's private directory
)

// Mount is one mount of a container.
type Mount struct {
	Type     string `json:"type"`
	Source   string `json:"source"` // host path, volume name, or session file name
	Target   string `json:"target"`
	ReadOnly bool   `json:"readonly"`
	// Create: the engine makes the volume, with these driver options and
	// Labels, when it is missing (Docker); empty where the launcher
	// creates it first (podman).
	Create string   `json:"create,omitempty"`
	Labels []string `json:"labels,omitempty"`
}

// Egress is what the run's proxy enforces.
type Egress struct {
	// Network is the network the proxy joins: "default" for the engine's
	// default network, else its name. The agent joins none.
	Network string `json:"network"`
	// PolicyFiles are the policy files the proxy reads, in its container.
	PolicyFiles []string `json:"policy_files"`
	// Policy is a headless run's own policy file (a session file), whole.
	Policy       string              `json:"policy,omitempty"`
	Services     []string            `json:"services"`
	Domains      []string            `json:"domains"`
	Deny         []string            `json:"deny"`
	AllowPrivate []string            `json:"allow_private"`
	Rules        map[string][]string `json:"rules"`
	// Intercepted are the hosts whose HTTPS the proxy terminates: those a
	// secret is bound to and those with request rules.
	Intercepted []string `json:"intercepted"`
	// Hold is config egress.hold when it holds requests ("" refuses at
	// once); HoldPlaybook is the playbook whose run: block an Always
	// answer adds a host to ("" for policy.yaml).
	Hold         string `json:"hold,omitempty"`
	HoldPlaybook string `json:"hold_playbook,omitempty"`
}

// EnvSecret is a config.yaml env: variable: the agent gets its value.
type EnvSecret struct {
	Name  string `json:"name"`
	Vault string `json:"vault"`
}

// Claude is how Claude Code runs in the agent container. For a headless
// run each field is a flag of its command line (claude.go).
type Claude struct {
	Command []string `json:"command"`
	// Tools is --tools (the built-in tools the run has at all), nil for
	// Claude Code's defaults; AllowedTools is --allowedTools,
	// DisallowedTools --disallowedTools.
	Tools           []string `json:"tools"`
	AllowedTools    []string `json:"allowed_tools"`
	DisallowedTools []string `json:"disallowed_tools"`
	// PermissionMode, OutputFormat and SettingSources are
	// --permission-mode, --output-format and --setting-sources.
	PermissionMode string  `json:"permission_mode,omitempty"`
	OutputFormat   string  `json:"output_format,omitempty"`
	SettingSources string  `json:"setting_sources,omitempty"`
	MaxTurns       int     `json:"max_turns,omitempty"`
	MaxCostUSD     float64 `json:"max_cost_usd,omitempty"` // --max-budget-usd; 0: no cap
	// Settings are the settings files the image fixes (managed, read-only)
	// that the run reads.
	Settings []string `json:"settings"`
	// Print: Claude Code runs in print mode (-p), with no one to approve.
	Print bool `json:"print"`
	// Input is what Claude Code reads on its standard input ("": nothing).
	Input string      `json:"input,omitempty"`
	State ClaudeState `json:"state"`
}

// ClaudeState is where Claude Code keeps its state (CLAUDE_CONFIG_DIR:
// user settings, the sign-in, transcripts, links to the instance's skills
// and agents) in the agent container. A session mounts the instance's
// state volume there, writable, and keeps it from one session to the next.
// A headless run never mounts it writable: it gets a directory of its own
// (a tmpfs), empty at the start and discarded with the container, into
// which only the sign-in is copied (Seed, read from the volume read-only
// by the plan's Seed container), so nothing a run writes reaches another
// run or a later session through Claude Code's state.
type ClaudeState struct {
	Dir    string `json:"dir"`
	Volume string `json:"volume"` // the instance's state volume
	Fresh  bool   `json:"fresh"`  // the run's own directory, not the volume
	// Seed are the files copied from Volume into the fresh directory
	// before Claude Code starts.
	Seed []string `json:"seed,omitempty"`
}

// ManagedSettings is where the image keeps Claude Code's managed settings
// and the identity (dist/Dockerfile); ManagedSettingsDir holds the drop-in
// that allows the framework skills' commands for sessions, which a
// headless run's plan covers.
var ManagedSettings = []string{"/etc/claude-code/managed-settings.json", "/etc/claude-code/CLAUDE.md"}

// Claude Code paths (https://code.claude.com/docs/en/managed-settings,
// https://code.claude.com/docs/en/authentication: on Linux the sign-in is
// .credentials.json in the config directory).
const (
	ManagedSettingsDir = "/etc/claude-code/managed-settings.d"
	ClaudeCredentials  = ".credentials.json"
	// SeedDir is where the seed container mounts the state volume.
	SeedDir = "/seed"
	// StateListDir is where the proxy mounts the state volume read-only
	// (Plan.StateListing).
	StateListDir = "/run/hobbs-state"
	// StateListingPrefix begins the name of each session's listing files
	// in the egress logs' directory (Plan.StateListing).
	StateListingPrefix = ".state-"
)

// claudeStateTmpfs are the options of a run's own Claude Code directory:
// the session's user owns it, no one else reads it; its size bounds what a
// run can keep there in memory.
const claudeStateTmpfs = "rw,size=64m,mode=0700"

// runVolumeOpts are the socket volume's tmpfs options: small, sticky and
// open to all like /tmp (the engine mounts it as root, and both containers
// run as the user).
const runVolumeOpts = "size=64k,mode=1777"

// Shown in place of what only Execute knows.
const (
	shownOwner = "<launcher>"      // the owner label: the launcher's host/pid/start
	shownToken = "<token>"         // the proxy's per-session token
	shownFiles = "<session-files>" // the session's private directory
)

// New computes the run spec describes under config cfg. It is pure: an
// error is the user's to fix (a secret the run needs that config.yaml does
// not have, a name the launcher sets itself, a binding's bad host).
func New(cfg *config.Config, spec RunSpec) (*Plan, error) {
	if err := ValidName(spec.Name); err != nil {
		return nil, err
	}
	if cfg == nil {
		cfg = config.Default()
	}
	in, err := instance.At(spec.Host.Instance)
	if err != nil {
		return nil, err
	}
	h := spec.Host
	p := &Plan{Kind: spec.Kind, Session: spec.Name, Image: spec.Image, Instance: in.Root, Workspace: h.Workspace,
		UID: h.UID, GID: h.GID, Podman: h.Podman, instance: in, RunVolume: h.RunVolume,
		Env: []EnvSecret{}, Secrets: []policy.Binding{}}
	if p.RunVolume == "" {
		p.RunVolume = spec.Name + "-run"
	}
	grant := spec.Playbook
	headless := spec.Kind == KindPlaybook || spec.Kind == KindScheduled || spec.Kind == KindTrigger
	if headless != (grant != nil) {
		return nil, kindMismatch(spec.Kind, grant != nil, "a playbook grant")
	}
	if (spec.Kind == KindChat) != (spec.Chat != nil) {
		return nil, kindMismatch(spec.Kind, spec.Chat != nil, "a chat turn")
	}
	if spec.Kind == KindChat {
		spec.TTY = false // no one is at a terminal
	}
	if (spec.Kind == KindTrigger) != (spec.Trigger != nil) {
		return nil, kindMismatch(spec.Kind, spec.Trigger != nil, "a trigger")
	}
	if spec.Trigger != nil {
		// Untrusted input starts the run: only what a run: block grants,
		// never the instance's defaults.
		if !grant.Declared {
			return nil, errs.Usagef("%s has no run: block: a triggered run gets only what an approved run: block grants", grant.Playbook).
				Advise(TriggerNoRun, "playbook", grant.Playbook)
		}
		p.Trigger, p.Event = spec.Trigger.Name, append([]byte{}, spec.Trigger.Event...)
		p.Mail = spec.Trigger.Source == TriggerSourceIMAP
	}
	if err := p.secrets(cfg, grant); err != nil {
		return nil, err
	}
	if err := p.egress(cfg, spec, grant); err != nil {
		return nil, err
	}
	p.claude(cfg, spec, grant)
	if grant != nil {
		p.Playbook = grant.Playbook
		p.Timeout, p.TimeoutText = grant.Timeout, grant.Timeout.String()
	}
	if ch := spec.Chat; ch != nil {
		p.Conversation, p.Untrusted = ch.Conversation, ch.Untrusted
		p.Timeout, p.TimeoutText = ch.timeout(), ch.timeout().String()
	}
	p.WorkspaceGitReadOnly = h.WorkspaceGit && cfg.GitReadOnly()
	p.DiskWatch = diskWatch(cfg, in, h)
	p.Agent = p.agent(cfg, spec, h)
	p.Proxy = p.proxy(h)
	if p.Claude.State.Fresh {
		p.Seed = p.seed()
	}
	p.AgentVars = p.shownAgentEnv()
	p.Create.Agent, p.Create.Proxy, p.Create.Seed = p.Args()
	return p, nil
}

// kindMismatch is the error of a spec whose kind and parts disagree (a
// caller's mistake, never the user's).
func kindMismatch(k Kind, has bool, what string) error {
	with := "with"
	if !has {
		with = "without"
	}
	return errs.Failf("internal: a %s run %s %s", k, with, what)
}

// egress is the proxy's policy: the instance's, or a headless run's own,
// narrowed to its run: block's hosts.
func (p *Plan) egress(cfg *config.Config, spec RunSpec, grant *playbook.Allowance) error {
	e := &p.Egress
	e.Network = "default"
	if n := egressNetworkOf(cfg, spec.Name); n != "" {
		e.Network = n
	}
	if d := cfg.Egress.HoldDuration(); d > 0 {
		e.Hold = d.String()
	}
	pol := spec.Policy
	if grant != nil && grant.Declared {
		if pol == nil {
			return errs.Failf("internal: a run: block's plan without the instance's policy")
		}
		b, err := pol.Narrow("The policy of a headless run of playbook "+grant.Playbook+" (hobbs playbook run).", grant.Hosts)
		if err != nil {
			return errs.Wrap(errs.Failure, err, "run policy")
		}
		if pol, err = policy.Parse(SessionPolicyFile, b); err != nil {
			return errs.Wrap(errs.Failure, err, "run policy")
		}
		p.ProxyPolicy, e.Policy = b, string(b)
		e.PolicyFiles = []string{SessionPolicyFile}
		if e.Hold != "" {
			e.HoldPlaybook = grant.Playbook
		}
	} else {
		e.PolicyFiles = []string{PolicyFile, InstanceDir + "/policy.yaml"}
	}
	e.Services, e.Domains, e.Deny, e.AllowPrivate, e.Rules = []string{}, []string{}, []string{}, []string{}, map[string][]string{}
	intercepted := map[string]bool{}
	if pol != nil {
		e.Services = append(e.Services, pol.Services...)
		for _, r := range pol.Domains {
			e.Domains = append(e.Domains, r.Pattern)
		}
		for _, r := range pol.Deny {
			e.Deny = append(e.Deny, r.Pattern)
		}
		for _, a := range pol.AllowPrivate {
			e.AllowPrivate = append(e.AllowPrivate, a.String())
		}
		for _, hr := range pol.Rules {
			for _, rr := range hr.Requests {
				e.Rules[hr.Host.Pattern] = append(e.Rules[hr.Host.Pattern], rr.Text)
			}
			intercepted[hr.Host.Pattern] = true
		}
	}
	for _, b := range p.Secrets {
		for _, h := range b.Hosts {
			intercepted[h] = true
		}
	}
	e.Intercepted = sortedKeys(intercepted)
	return nil
}

// hardening is what both containers get: the user's uid, no capability,
// no new privileges, the session's seccomp profile and an init process
// (--init). The agent needs one: Claude Code starts many children, and
// their orphans must be reaped. The proxy needs one too, though it starts
// no children: as process 1 of its container the kernel would drop a
// SIGTERM that arrives before the Go runtime has installed its handlers — a
// session whose command ends while the proxy is still starting (`hobbs run
// -- true`) — and `docker stop` would then wait its whole timeout. Under an
// init the signal ends a proxy that is not up yet at once.
//
// The seccomp profile (seccomp.go) is read by the engine's CLI from its
// standard input (SeccompSource): no file is left. Podman maps the user's
// uid into the container as itself (keep-id).
func (p *Plan) hardening(c *Container) {
	c.User = fmt.Sprintf("%d:%d", p.UID, p.GID)
	c.CapDrop = []string{"ALL"}
	c.SecurityOpt = []string{"no-new-privileges", "seccomp=" + SeccompSource}
	c.Init = true
	if p.Podman {
		c.Userns = "keep-id"
	}
}

// runMount is the session's socket volume (a small tmpfs) at RunDir.
func (p *Plan) runMount(readonly bool) Mount {
	m := Mount{Type: MountVolume, Source: p.RunVolume, Target: RunDir, ReadOnly: readonly}
	if !p.Podman {
		m.Create = "volume-driver=local,volume-opt=type=tmpfs,volume-opt=device=tmpfs,\"volume-opt=o=" + runVolumeOpts + "\""
		m.Labels = Labels(p.Session, InstanceID(p.instance), shownOwner, RoleRun, "")
	}
	return m
}

func (p *Plan) agent(cfg *config.Config, spec RunSpec, h Host) Container {
	c := Container{Name: spec.Name, Role: RoleAgent, Hostname: "hobbs", Network: "none", Remove: true, Interactive: true,
		TTY: spec.TTY, Image: spec.Image, Workdir: WorkspaceDir, Command: p.Claude.Command}
	c.Labels = Labels(spec.Name, InstanceID(p.instance), shownOwner, RoleAgent, h.Workspace)
	p.hardening(&c)
	c.Resources = Resources{PIDs: cfg.Resources.PIDs, Memory: cfg.Resources.Memory, CPUs: cfg.Resources.CPUs}
	c.Env = []string{"HOME=" + HomeDir, "USER=dev", "HOBBS_HOME=" + InstanceDir, "HOBBS_CONTEXT=container",
		"NO_PROXY=localhost,127.0.0.1", "no_proxy=localhost,127.0.0.1",
		"HOBBS_PROXY_SOCKET=" + ProxySocket, "HOBBS_PROXY_RELAY=" + RelayAddr}
	c.Mounts = append(c.Mounts, p.sessionFile("env", SessionEnvFile, RoleAgent, "the agent's variables: proxy URL with the token, env: values, placeholders"),
		p.sessionFile("ca.pem", SessionCAFile, RoleAgent, "the session CA's certificate"),
		p.sessionFile("review.json", provenance.SessionList, RoleAgent, "the changes waiting for the owner's review at the start (hobbs review lists them)"))
	if g := spec.Playbook; g != nil && g.Text != nil {
		// The run carries out the text its approval was checked against,
		// never the file again (a session may change it meanwhile).
		p.PlaybookText = append([]byte{}, g.Text...)
		c.Env = append(c.Env, playbook.EnvRunPlaybook+"="+g.Playbook, playbook.EnvRunPlaybookFile+"="+SessionPlaybookFile)
		c.Mounts = append(c.Mounts, p.sessionFile("playbook.md", SessionPlaybookFile, RoleAgent,
			"the playbook's text as checked against its approval before the run: what hobbs playbook show prints in the run"))
		// So are the skills and sub-agents it names, and no others: the
		// shell start-up links these copies, not the shares
		// (hobbs-init.sh).
		p.RunAssets = append([]playbook.AssetFile{}, g.Assets...)
		c.Env = append(c.Env, playbook.EnvRunAssets+"="+SessionAssetsDir)
		c.Mounts = append(c.Mounts, p.sessionFile("assets", SessionAssetsDir, RoleAgent, assetsHolds(g.Assets)))
	}
	if t := spec.Trigger; t != nil {
		c.Env = append(c.Env, EnvEvent+"="+SessionEventFile)
		c.Mounts = append(c.Mounts, p.sessionFile("event.json", SessionEventFile, RoleAgent,
			"the event that started the run, normalised JSON: untrusted input from "+t.Source+" (trigger "+t.Name+")"))
		p.attachments(&c, t)
	}
	// The workspace and the instance's shares: never the instance root,
	// whose entries the agent could rename or plant.
	c.Mounts = append(c.Mounts, Mount{Type: MountBind, Source: h.Workspace, Target: WorkspaceDir})
	if p.WorkspaceGitReadOnly {
		c.Mounts = append(c.Mounts, Mount{Type: MountBind, Source: filepath.Join(h.Workspace, ".git"), Target: WorkspaceDir + "/.git", ReadOnly: true})
	}
	for _, sh := range h.Shares {
		if h.Layers != "" && layered(sh, h.Layers) {
			m, lm := p.layerMount(sh, h.Layers)
			c.Mounts, p.Layers = append(c.Mounts, m), append(p.Layers, lm)
			continue
		}
		c.Mounts = append(c.Mounts, Mount{Type: MountBind, Source: filepath.Join(p.Instance, filepath.FromSlash(sh.Rel)),
			Target: InstanceDir + "/" + sh.Rel, ReadOnly: sh.ReadOnly})
	}
	c.Mounts = append(c.Mounts, p.runMount(true))
	if st := p.Claude.State; st.Fresh {
		// A run's own Claude Code directory, owned by the session's user,
		// and its sign-in (filled in by the seed).
		owner := fmt.Sprintf("uid=%d,gid=%d", p.UID, p.GID)
		if p.Podman {
			owner = "U" // podman takes no uid=: U gives the tmpfs to the container's user
		}
		c.Tmpfs = append(c.Tmpfs, ClaudeDir+":"+claudeStateTmpfs+","+owner)
		if p.Kind != KindChat {
			// A playbook run approves only its block's tools; a chat turn
			// keeps a session's approvals (claude.go).
			c.Tmpfs = append(c.Tmpfs, ManagedSettingsDir+":ro,size=4k,mode=0555")
		}
		c.Mounts = append(c.Mounts, p.sessionFile("claude-credentials", SessionClaudeCredentials, RoleAgent,
			"Claude Code's sign-in, read from the state volume "+st.Volume+" by the seed (empty when it has none); copied into "+ClaudeDir+" at start"))
		return c
	}
	c.Mounts = append(c.Mounts, p.claudeVolume(false, ClaudeDir))
	return c
}

// claudeVolume is the instance's Claude state volume mounted at target.
// The engine makes a missing one (Docker) with these labels.
func (p *Plan) claudeVolume(readonly bool, target string) Mount {
	m := Mount{Type: MountVolume, Source: p.Claude.State.Volume, Target: target, ReadOnly: readonly}
	if !p.Podman {
		m.Labels = StateLabels(InstanceID(p.instance))
	}
	return m
}

// seed is the container a run's sign-in is read from: created with the
// state volume mounted read-only, never started (its entry point would do
// nothing); the launcher copies the one file out of it with the engine's
// cp, which runs no process, and removes it. It has no network. The
// launcher takes a bounded JSON object from it (launcher.Execute).
func (p *Plan) seed() *Container {
	c := &Container{Name: SeedName(p.Session), Role: RoleSeed, Hostname: "seed", Network: "none", Image: p.Image,
		Entrypoint: "true"}
	c.Labels = Labels(p.Session, InstanceID(p.instance), shownOwner, RoleSeed, "")
	p.hardening(c)
	c.Resources = Resources{PIDs: 16, Memory: "64m"}
	c.Env = []string{"HOME=" + HomeDir}
	c.Mounts = []Mount{p.claudeVolume(true, SeedDir)}
	return c
}

// SeedName is the name of session's seed container.
func SeedName(session string) string { return session + "-seed" }

func (p *Plan) proxy(h Host) Container {
	c := Container{Name: ProxyName(p.Session), Role: RoleProxy, Hostname: "proxy", StopSignal: "SIGTERM",
		Image: p.Image, Entrypoint: "hobbs"}
	if p.Egress.Network != "default" {
		c.Network = p.Egress.Network
	}
	c.Labels = Labels(p.Session, InstanceID(p.instance), shownOwner, RoleProxy, "")
	p.hardening(&c)
	c.Resources = Resources{PIDs: 256, Memory: "512m"}
	c.Env = []string{"HOME=" + HomeDir, "HOBBS_HOME=" + InstanceDir, "HOBBS_CONTEXT=proxy"}
	// Its one listening socket, in the volume the agent mounts too; its
	// token, the session CA and bound secrets in session files.
	c.Mounts = append(c.Mounts, p.runMount(false),
		p.sessionFile("token", SessionTokenFile, RoleProxy, "the proxy's token"),
		p.sessionFile("secrets", SessionSecretsFile, RoleProxy, "the session CA with its key; bound secrets' placeholders and values"))
	if h.UpstreamCA {
		c.Mounts = append(c.Mounts, p.sessionFile("upstream.pem", SessionUpstreamCA, RoleProxy, "extra roots for intercepted hosts (tests)"))
	}
	// The instance read-only (policy.yaml, watched for changes), the
	// directory of its audit log writable, the vault hidden.
	c.Mounts = append(c.Mounts, Mount{Type: MountBind, Source: p.Instance, Target: InstanceDir, ReadOnly: true},
		Mount{Type: MountBind, Source: p.instance.EgressLogs(), Target: InstanceDir + "/" + instance.EgressLogsRel})
	if h.Vault {
		c.Tmpfs = []string{InstanceDir + "/vault:ro,size=16k,mode=0555"}
	}
	if p.ProxyPolicy != nil {
		c.Mounts = append(c.Mounts, p.sessionFile("policy.yaml", SessionPolicyFile, RoleProxy, "the run's own egress policy"))
	}
	c.Command = []string{"proxy", "--listen", "unix:" + ProxySocket}
	for _, f := range p.Egress.PolicyFiles {
		c.Command = append(c.Command, "--policy", f)
	}
	if len(p.Layers) > 0 && !p.Claude.State.Fresh && p.Claude.State.Volume != "" {
		// The state volume read-only, listed into a host-only file (the
		// egress logs' directory) once the agent has ended: the
		// launcher's reading of the user scope at the session's end.
		p.StateListing = instance.EgressLogsRel + "/" + StateListingPrefix + p.Session + ".json"
		c.Mounts = append(c.Mounts, p.claudeVolume(true, StateListDir))
		c.Command = append(c.Command, "--state-dir", StateListDir, "--state-listing", InstanceDir+"/"+p.StateListing)
	}
	c.Command = append(c.Command, "--audit", InstanceDir+"/"+instance.EgressAuditLogRel, "--session", p.Session, "--auth-token-file", SessionTokenFile,
		"--secrets-file", SessionSecretsFile,
		// Stopped once the agent is gone: what tunnels are left have no
		// client; they are closed (and audited) well within proxyStopTime.
		"--grace", "2s")
	if h.UpstreamCA {
		c.Command = append(c.Command, "--upstream-ca", SessionUpstreamCA)
	}
	if e := p.Egress; e.Hold != "" {
		// Questions go in the approvals directory, below the egress logs'
		// (mounted above): host-only, never the agent's.
		o := p.Origin()
		origin := o.Kind
		if o.Name != "" {
			origin += ":" + o.Name
		}
		c.Command = append(c.Command, "--hold", e.Hold, "--approvals", InstanceDir+"/"+instance.ApprovalsRel, "--origin", origin)
		if o.Untrusted != "" {
			// Its start is tainted (provenance.Origin.StartTaint); the
			// reason stays the host's (it may quote someone else's name).
			c.Command = append(c.Command, "--untrusted")
		}
		if e.HoldPlaybook != "" {
			c.Command = append(c.Command, "--playbook", e.HoldPlaybook)
		}
	}
	return c
}

// egressNetworkOf is the network session name's proxy joins (config
// egress_network): "" for the engine's default network (no --network
// flag), the session's own network, or the one named.
func egressNetworkOf(cfg *config.Config, name string) string {
	v := config.EgressDefault
	if cfg != nil {
		v = cfg.EgressNet
	}
	switch v {
	case config.EgressDefault, "":
		return ""
	case config.EgressSession:
		return EgressNetwork(name)
	}
	return v
}

// CreateArgs renders c as the engine's create command, with the session's
// private directory files and the launcher's owner label in place of
// what the plan shows for them.
func (c Container) CreateArgs(files, owner string) []string {
	label := func(l string) string {
		if l == LabelOwner+"="+shownOwner {
			return LabelOwner + "=" + owner
		}
		return l
	}
	a := []string{"create", "--pull", "never"}
	if c.Remove {
		a = append(a, "--rm")
	}
	if c.Name != "" {
		a = append(a, "--name", c.Name)
	}
	a = append(a, "--hostname", c.Hostname)
	if c.Interactive {
		a = append(a, "-i")
	}
	if c.TTY {
		a = append(a, "-t")
	}
	for _, l := range c.Labels {
		a = append(a, "--label", label(l))
	}
	if c.Network != "" {
		a = append(a, "--network", c.Network)
	}
	if c.StopSignal != "" {
		a = append(a, "--stop-signal", c.StopSignal)
	}
	a = append(a, "--user", c.User)
	for _, cp := range c.CapDrop {
		a = append(a, "--cap-drop", cp)
	}
	for _, o := range c.SecurityOpt {
		a = append(a, "--security-opt", o)
	}
	if c.Init {
		a = append(a, "--init")
	}
	if c.Userns != "" {
		a = append(a, "--userns", c.Userns)
	}
	if c.Resources.PIDs > 0 {
		a = append(a, "--pids-limit", strconv.Itoa(c.Resources.PIDs))
	}
	if c.Resources.Memory != "" {
		a = append(a, "--memory", c.Resources.Memory)
	}
	if c.Resources.CPUs != "" {
		a = append(a, "--cpus", c.Resources.CPUs)
	}
	for _, e := range c.Env {
		a = append(a, "-e", e)
	}
	for _, m := range c.Mounts {
		a = append(a, "--mount", m.flag(files, label))
	}
	for _, t := range c.Tmpfs {
		a = append(a, "--tmpfs", t)
	}
	if c.Workdir != "" {
		a = append(a, "-w", c.Workdir)
	}
	if c.Entrypoint != "" {
		a = append(a, "--entrypoint", c.Entrypoint)
	}
	a = append(a, c.Image)
	return append(a, c.Command...)
}

// flag is the mount's --mount value. Read-only is "ro", which both
// engines take (podman 4.3 refuses "readonly" on a volume, and Docker reads
// the two alike).
func (m Mount) flag(files string, label func(string) string) string {
	typ, src := m.Type, m.Source
	switch m.Type {
	case MountSessionFile:
		typ, src = MountBind, files+"/"+m.Source
	}
	f := "type=" + typ + ",source=" + src + ",target=" + m.Target
	if m.ReadOnly {
		f += ",ro"
	}
	if m.Create != "" {
		f += "," + m.Create
	}
	for _, l := range m.Labels {
		f += ",volume-label=" + label(l)
	}
	return f
}

// Args are the create commands of the containers as the plan shows them:
// the session's private directory and the owner label as placeholders.
func (p *Plan) Args() (agent, proxy, seed []string) {
	if p.Seed != nil {
		seed = p.Seed.CreateArgs(shownFiles, shownOwner)
	}
	return p.Agent.CreateArgs(shownFiles, shownOwner), p.Proxy.CreateArgs(shownFiles, shownOwner), seed
}

// sortedKeys returns m's keys sorted.
func sortedKeys[V any](m map[string]V) []string {
	k := make([]string, 0, len(m))
	for x := range m {
		k = append(k, x)
	}
	sort.Strings(k)
	return k
}
