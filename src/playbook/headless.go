package playbook

import (
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/policy"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// What each stage allows:
//
//	manual, assisted  in a session only, with the user; never headless
//	supervised        headless by hand (hobbs playbook run); each run waits for the user's review;
//	                  without a run: block it runs with the instance defaults, and says so
//	autonomous        headless by hand or on a schedule; must have a run: block

// CanRunHeadless reports whether playbook name with metadata m may run
// headless (hobbs playbook run). The error says what to do next.
func CanRunHeadless(name string, m Meta) error {
	switch m.Stage {
	case "supervised":
		return nil
	case "autonomous":
		if m.Run == nil {
			return errs.Usagef("%s is autonomous but has no run: block, so a run would get the instance's every host and secret", name).
				Advise(AutonomousNoRun, "name", name)
		}
		return nil
	}
	i := StageIndex(m.Stage)
	next := Stages[i+1]
	e := errs.Usagef("%s is at stage %s: only supervised and autonomous playbooks run headless", name, m.Stage)
	if m.Stage == "assisted" {
		return e.Advise(AssistedNotHeadless, "name", name, "next", next)
	}
	return e.Advise(ManualNotHeadless, "name", name, "next", next)
}

// CanSchedule reports whether playbook name may run on a schedule: only an
// autonomous playbook with a run: block may.
func CanSchedule(name string, m Meta) error {
	if m.Stage != "autonomous" {
		e := errs.Usagef("%s is at stage %s: only autonomous playbooks can be scheduled", name, m.Stage)
		if m.Stage == "supervised" {
			return e.Advise(SupervisedNotScheduled, "name", name)
		}
		return e.Advise(ClimbTheLadder)
	}
	return CanRunHeadless(name, m)
}

// DefaultsNotice is what a run of a playbook without a run: block says: it
// gets the instance defaults, not least privilege.
func DefaultsNotice(name string) string {
	return fmt.Sprintf("%s has no run: block: it runs with the instance defaults (the whole egress policy, every secret config.yaml maps, no tool use approved beyond reading the playbook, %d turns, %s); declare what it needs under run: to narrow it",
		name, DefaultMaxTurns, DefaultTimeout)
}

// Allowance is everything a headless run of one playbook is allowed: computed
// from the playbook's run: block and the instance's effective egress policy
// (ComputeAllowance). Its run's plan (package plan) is made from it.
type Allowance struct {
	Playbook string `json:"playbook"`
	// Text is the playbook's file as PrepareRun read and checked it against
	// its approval: a run is handed these bytes (EnvRunPlaybookFile), never
	// the file again, which a session could change meanwhile.
	Text []byte `json:"-"`
	// Assets are the files of the instance skills and sub-agents the
	// text names, as PrepareRun read and checked them against the
	// approval: a run is handed these bytes and links no other instance
	// skill or sub-agent (nil: none named, or not approved).
	Assets []AssetFile `json:"-"`
	Path   string      `json:"path"`
	Stage  string      `json:"stage"`
	// Declared is false for a supervised playbook without a run: block:
	// the run gets the instance defaults (Hosts, Secrets and Tools are nil,
	// meaning the instance policy whole, every mapped secret, Claude Code's
	// default tools) and Notice says so.
	Declared bool   `json:"declared"`
	Notice   string `json:"notice,omitempty"`
	// Hosts are the egress policy domains entries the run's proxy allows:
	// the intersection of run.hosts with what the instance policy allows
	// (IntersectHosts). Deny are the instance policy's deny entries, which
	// still apply; AllowPrivate its allow_private ranges.
	Hosts        []string `json:"hosts"`
	Deny         []string `json:"deny"`
	AllowPrivate []string `json:"allow_private"`
	// Excluded are the run.hosts (or the parts of them) the instance
	// policy does not allow, with the command that would allow them.
	Excluded []ExcludedHost `json:"excluded"`
	Secrets  []string       `json:"secrets"` // variable names; only these reach the run
	Tools    []string       `json:"tools"`   // Claude Code --allowedTools; [] allows none beyond the defaults that need no permission
	MaxTurns int            `json:"max_turns"`
	// MaxCostUSD is run.max_cost_usd: Claude Code's --max-budget-usd (0:
	// no cap).
	MaxCostUSD float64       `json:"max_cost_usd,omitempty"`
	Timeout    time.Duration `json:"-"`
	// TimeoutText is Timeout as text, for JSON.
	TimeoutText string `json:"timeout"`

	policy *policy.Policy
	run    *Run
}

// ExcludedHost is a run host the instance policy does not allow.
type ExcludedHost struct {
	Host   string `json:"host"`
	Reason string `json:"reason"`
	Fix    string `json:"fix"` // the command that would allow it
}

// ComputeAllowance checks that playbook name may run headless and returns what
// its run is allowed, given the instance's effective policy pol.
func ComputeAllowance(name, path string, m Meta, pol *policy.Policy) (Allowance, error) {
	if err := CanRunHeadless(name, m); err != nil {
		return Allowance{}, err
	}
	s := Allowance{Playbook: name, Path: path, Stage: m.Stage, policy: pol, run: m.Run,
		MaxTurns: m.Run.Turns(), Timeout: m.Run.TimeoutDuration(), Deny: []string{}, AllowPrivate: []string{}, Excluded: []ExcludedHost{}}
	s.TimeoutText = s.Timeout.String()
	if pol != nil {
		for _, r := range pol.Deny {
			s.Deny = append(s.Deny, r.Pattern)
		}
		for _, p := range pol.AllowPrivate {
			s.AllowPrivate = append(s.AllowPrivate, p.String())
		}
	}
	if m.Run == nil {
		s.Notice = DefaultsNotice(name)
		return s, nil
	}
	s.Declared = true
	s.MaxCostUSD = m.Run.MaxCostUSD
	s.Secrets = append([]string{}, m.Run.Secrets...)
	s.Tools = append([]string{}, m.Run.Tools...)
	var allowed []*policy.Rule
	if pol != nil {
		allowed = policyAllowRules(pol)
	}
	s.Hosts = []string{}
	seen := map[string]bool{}
	for _, h := range m.Run.Hosts {
		r, err := policy.ParseRule(h)
		if err != nil {
			return Allowance{}, errs.Usagef("%s: run: hosts: %v", path, err) // Parse refuses such a file; defensive
		}
		got := IntersectHosts(r, allowed)
		for _, g := range got {
			if !seen[g] {
				seen[g] = true
				s.Hosts = append(s.Hosts, g)
			}
		}
		switch {
		case len(got) == 0:
			s.Excluded = append(s.Excluded, ExcludedHost{Host: r.Pattern, Reason: "the instance policy does not allow it",
				Fix: "hobbs policy allow " + r.Pattern})
		case r.Wildcard && !(len(got) == 1 && got[0] == r.Pattern):
			s.Excluded = append(s.Excluded, ExcludedHost{Host: r.Pattern,
				Reason: "the instance policy allows only " + strings.Join(got, ", ") + " of it",
				Fix:    "hobbs policy allow " + r.Pattern})
		}
	}
	return s, nil
}

// policyAllowRules are the allow rules of pol: its domains entries and the
// domains of its services.
func policyAllowRules(pol *policy.Policy) []*policy.Rule {
	out := append([]*policy.Rule{}, pol.Domains...)
	svc := map[string]bool{}
	for _, name := range pol.Services {
		svc[name] = true
	}
	for _, s := range policy.Services() {
		if !svc[s.Name] {
			continue
		}
		for _, d := range s.Domains {
			if r, err := policy.ParseRule(d); err == nil {
				out = append(out, r)
			}
		}
	}
	return out
}

// IntersectHosts returns the policy entries that admit exactly the
// destinations both run and one of allowed admit (the union over allowed of
// run ∩ rule), as canonical patterns:
//
//   - names: equal exact names meet in that name; an exact name meets a
//     wildcard *.s when it is a strict subdomain of s; two wildcards *.s and
//     *.t meet in the narrower one when one suffix is within the other
//     (s = t, or s a subdomain of t: *.s), else nowhere. IP addresses meet
//     only themselves.
//   - ports: an entry without a port admits the default ports (443 through
//     a CONNECT tunnel, 80 and 443 for plain HTTP), an entry with a port
//     admits only that port. Equal ports meet in that port; no port meets
//     443 in 443; any other pair (80 with no port included: "80 over plain
//     HTTP only" has no entry of its own) meets nowhere. The result is never
//     wider than either side.
//
// The instance's deny entries are not applied here: they go into the run's
// policy unchanged (Allowance.Deny) and win there as everywhere.
func IntersectHosts(run *policy.Rule, allowed []*policy.Rule) []string {
	var out []string
	seen := map[string]bool{}
	for _, q := range allowed {
		p, ok := intersect(run, q)
		if ok && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

func intersect(a, b *policy.Rule) (string, bool) {
	port, ok := meetPorts(a.Port, b.Port)
	if !ok {
		return "", false
	}
	host, wild := "", false
	switch {
	case !a.Wildcard && !b.Wildcard:
		if a.Host != b.Host {
			return "", false
		}
		host = a.Host
	case !a.Wildcard && b.Wildcard:
		if !strictSub(a.Host, b.Host) {
			return "", false
		}
		host = a.Host
	case a.Wildcard && !b.Wildcard:
		if !strictSub(b.Host, a.Host) {
			return "", false
		}
		host = b.Host
	default:
		switch {
		case a.Host == b.Host || strictSub(a.Host, b.Host):
			host = a.Host
		case strictSub(b.Host, a.Host):
			host = b.Host
		default:
			return "", false
		}
		wild = true
	}
	return pattern(host, wild, port), true
}

func meetPorts(a, b int) (int, bool) {
	switch {
	case a == b:
		return a, true
	case a == 0 && b == 443, b == 0 && a == 443:
		return 443, true
	}
	return 0, false
}

// strictSub reports whether name h is a strict subdomain of s.
func strictSub(h, s string) bool {
	if _, err := netip.ParseAddr(h); err == nil {
		return false
	}
	return strings.HasSuffix(h, "."+s)
}

func pattern(host string, wild bool, port int) string {
	p := host
	if strings.Contains(host, ":") {
		p = "[" + host + "]"
	}
	if wild {
		p = "*." + p
	}
	if port != 0 {
		p += ":" + strconv.Itoa(port)
	}
	return p
}

// AllowCommands returns the commands that would let this playbook's runs
// reach host (a name or address as the proxy reports it) on port (0: 443):
// hobbs playbook allow when run.hosts does not cover it, hobbs policy allow
// when the instance policy does not. None when both already allow it (a deny
// entry then decides: see hobbs policy check).
func (s Allowance) AllowCommands(host string, port int) []string {
	if port == 0 {
		port = 443
	}
	target := AllowTarget(host, port)
	var out []string
	if s.Declared {
		covered := false
		for _, h := range s.run.Hosts {
			if r, err := policy.ParseRule(h); err == nil && matches(r, host, port) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, "hobbs playbook allow "+s.Playbook+" "+target)
		}
	}
	if s.policy != nil && !s.policy.Decide(host, port, true).Allow {
		out = append(out, "hobbs policy allow "+target)
	}
	return out
}

// matches reports whether rule r admits host:port through a CONNECT tunnel.
func matches(r *policy.Rule, host string, port int) bool {
	if r.Port != port && !(r.Port == 0 && port == 443) {
		return false
	}
	if r.Wildcard {
		return strictSub(host, r.Host)
	}
	return r.Host == host
}

// RunLockName is the instance lock (instance.Lock) held for the length of a
// run of playbook name.
func RunLockName(name string) string { return "playbook-run-" + name }

// LockRun takes the run lock of playbook name at lockPath (opened beneath
// fsys) without waiting: when another run holds it, the error says so. The
// lock is an flock on the file, released by unlock or by the kernel when
// the process ends, however it ends.
func LockRun(fsys safefile.Root, lockPath, name string) (unlock func(), err error) {
	if err := fsys.MkdirAll(filepath.Dir(lockPath), 0o755); err != nil {
		return nil, errs.Wrap(errs.Failure, err, "create lock directory")
	}
	unlock, err = fsys.Lock(lockPath, time.Nanosecond)
	if errors.Is(err, safefile.ErrLockTimeout) {
		return nil, errs.Failf("%s is already running: two runs of one playbook never overlap", name).
			Advise(AlreadyRunning)
	}
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "lock the run of %s", name)
	}
	return unlock, nil
}

// AllowTarget is how hobbs playbook allow names host at port: the host
// alone for 443, else host:port (an IPv6 address in brackets).
func AllowTarget(host string, port int) string {
	target := host
	if strings.Contains(host, ":") {
		target = "[" + host + "]"
	}
	if port != 0 && port != 443 {
		target += ":" + strconv.Itoa(port)
	}
	return target
}
