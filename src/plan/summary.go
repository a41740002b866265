package plan

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/hobbs-agent/hobbs/src/playbook"
	"github.com/hobbs-agent/hobbs/src/policy"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// WriteSummary prints the plan for a reader: who runs what, as whom, with
// which mounts, network, secrets (by name) and limits. The whole plan is
// its JSON (hobbs run --plan --json).
func (p *Plan) WriteSummary(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t%s\n", k, fmt.Sprintf(format, args...)) }
	list := func(v []string) string {
		if len(v) == 0 {
			return "(none)"
		}
		return strings.Join(v, ", ")
	}
	what := map[Kind]string{KindSession: "a session", KindPlaybook: "a headless run of playbook " + p.Playbook,
		KindScheduled: "a scheduled run of playbook " + p.Playbook, KindChat: "a chat turn of conversation " + p.Conversation,
		KindTrigger: "a run of playbook " + p.Playbook + " for trigger " + p.Trigger}[p.Kind]
	row("session", "%s (%s)", p.Session, what)
	row("image", "%s", p.Image)
	row("workspace", "%s", p.Workspace)
	a := p.Agent
	row("agent", "user %s, network %s, cap-drop %s, %s, init", a.User, a.Network, list(a.CapDrop), list(a.SecurityOpt))
	row("agent limits", "pids %s, memory %s, cpus %s", orNone(a.Resources.PIDs), orDash(a.Resources.Memory), orDash(a.Resources.CPUs))
	for _, m := range a.Mounts {
		row("  mount", "%s", m.describe())
	}
	for _, t := range a.Tmpfs {
		row("  tmpfs", "%s", t)
	}
	for _, l := range p.Layers {
		row("  layer", "%s/ in %s (%s): the session's own until its end; merged when untainted, held when tainted", l.Share, l.Dir, l.Mode)
	}
	if st := p.Claude.State; st.Fresh {
		row("claude state", "%s of its own (tmpfs, discarded); %s copied from volume %s, read-only", st.Dir, list(st.Seed), st.Volume)
	} else {
		row("claude state", "volume %s at %s, kept", st.Volume, st.Dir)
	}
	if sd := p.Seed; sd != nil {
		row("seed", "user %s, network %s: created, never started; %s copied out by the engine", sd.User, sd.Network, list(p.Claude.State.Seed))
		for _, m := range sd.Mounts {
			row("  mount", "%s", m.describe())
		}
	}
	x := p.Proxy
	row("proxy", "user %s, network %s, cap-drop %s", x.User, orDefault(x.Network), list(x.CapDrop))
	for _, m := range x.Mounts {
		row("  mount", "%s", m.describe())
	}
	for _, t := range x.Tmpfs {
		row("  tmpfs", "%s", t)
	}
	e := p.Egress
	row("egress policy", "%s", list(e.PolicyFiles))
	row("  services", "%s", list(e.Services))
	row("  domains", "%s", list(e.Domains))
	row("  deny", "%s", list(e.Deny))
	if len(e.AllowPrivate) > 0 {
		row("  allow_private", "%s", list(e.AllowPrivate))
	}
	for _, h := range sortedKeys(e.Rules) {
		row("  rules "+h, "%s", list(e.Rules[h]))
	}
	row("  intercepted", "%s", list(e.Intercepted))
	if e.Hold != "" {
		always := "always adds to policy.yaml"
		switch {
		case p.Kind == KindTrigger:
			always = "always is not offered (a triggered run is tainted)"
		case e.HoldPlaybook != "":
			always = "always adds to the run: block of playbook " + e.HoldPlaybook
		}
		row("  hold", "%s: a request to a host outside the policy waits for your answer (hobbs approvals); %s", e.Hold, always)
	}
	var env, bound []string
	for _, v := range p.Env {
		env = append(env, v.Name+" (vault:"+v.Vault+")")
	}
	for _, b := range p.Secrets {
		where := policy.Binding{In: b.In, Requests: b.Requests, Kind: b.Kind}.Where()
		bound = append(bound, b.Name+" → "+strings.Join(b.Hosts, " ")+" "+where)
	}
	row("env secrets", "%s", list(env))
	row("bound secrets", "%s", list(bound))
	c := p.Claude
	row("command", "%s", quoteArgs(c.Command))
	if c.Print {
		tools := "Claude Code's defaults"
		if c.Tools != nil {
			tools = list(c.Tools)
		}
		row("  tools", "%s", tools)
		if c.AllowedTools != nil {
			row("  allowed", "%s", list(c.AllowedTools))
		} else if p.Kind == KindChat {
			row("  allowed", "the managed settings' rules (%s)", ManagedSettingsDir)
		}
		row("  denied", "%s", list(c.DisallowedTools))
		row("  permissions", "%s, settings from %s", c.PermissionMode, c.SettingSources)
		row("  max turns", "%d", c.MaxTurns)
		cost := "no cap"
		if c.MaxCostUSD > 0 {
			cost = "$" + playbook.FormatUSD(c.MaxCostUSD)
		}
		row("  max cost", "%s", cost)
		if c.Input != "" {
			row("  stdin", "%s", c.Input)
		}
	}
	if p.TimeoutText != "" {
		row("timeout", "%s", p.TimeoutText)
	}
	if w := p.DiskWatch; w.MinFree > 0 {
		row("disk watch", "stops the run below %s free where the agent writes (%d paths; --json lists them)", safefile.FormatSize(w.MinFree), len(w.Paths))
	}
	return tw.Flush()
}

func (m Mount) describe() string {
	mode := "rw"
	if m.ReadOnly {
		mode = "ro"
	}
	src := m.Source
	switch m.Type {
	case MountVolume:
		src = "volume " + src
	case MountSessionFile:
		src = "session file " + src
	}
	return fmt.Sprintf("%s → %s (%s)", src, m.Target, mode)
}

func orNone(n int) string {
	if n <= 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func orDefault(n string) string {
	if n == "" {
		return "default"
	}
	return n
}

// quoteArgs joins a command line, quoting words with spaces or newlines.
func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n\"'") {
			a = fmt.Sprintf("%q", a)
		}
		q[i] = a
	}
	return strings.Join(q, " ")
}
