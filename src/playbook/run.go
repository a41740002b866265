package playbook

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/hobbs-agent/hobbs/src/policy"
)

// Run is a playbook's run: block: what one headless run of it needs, and
// nothing more.
//
//	run:
//	  hosts: ["api.bank.example", "*.files.example:8443"]   # egress policy "domains" forms
//	  secrets: ["BANK_TOKEN"]                              # variables config.yaml binds to vault entries
//	  tools: ["Read", "Bash(hobbs *)", "mcp__mail__send"]  # Claude Code tool names or patterns
//	  max_turns: 30                                        # > 0; default DefaultMaxTurns
//	  timeout: 20m                                         # Go duration > 0; default DefaultTimeout
//	  max_cost_usd: 2.50                                   # > 0; default none (Claude Code's --max-budget-usd)
type Run struct {
	Hosts    []string `json:"hosts"`   // canonical policy patterns (policy.ParseRule)
	Secrets  []string `json:"secrets"` // environment variable names
	Tools    []string `json:"tools"`
	MaxTurns int      `json:"max_turns,omitempty"` // 0: DefaultMaxTurns
	Timeout  string   `json:"timeout,omitempty"`   // a Go duration as written; "": DefaultTimeout
	// MaxCostUSD caps what the run may spend on API calls, in US dollars
	// (0: no cap). Omitted from JSON when unset, so the hash of a block
	// written before the key existed (RunHash) stays the same.
	MaxCostUSD float64 `json:"max_cost_usd,omitempty"`
}

// MaxCostLimit is the largest max_cost_usd a run: block may set: a typo
// (a missing decimal point) is refused rather than turned into no cap.
const MaxCostLimit = 10000

// Defaults of a run whose run: block leaves a limit out, or that has none.
const (
	DefaultMaxTurns = 50
	DefaultTimeout  = 30 * time.Minute
)

// runKeys are the keys of a run: block.
var runKeys = []string{"hosts", "secrets", "tools", "max_turns", "timeout", "max_cost_usd"}

var (
	secretRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// toolRe is a Claude Code permission rule: a tool name (Read, Bash,
	// mcp__server, mcp__server__tool) optionally followed by a specifier
	// in parentheses (Bash(git *), WebFetch(domain:example.com)).
	toolRe = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*(\([^()\r\n]+\))?$`)
)

// TimeoutDuration is r's timeout, or DefaultTimeout when none is set.
func (r *Run) TimeoutDuration() time.Duration {
	if r == nil || r.Timeout == "" {
		return DefaultTimeout
	}
	d, err := time.ParseDuration(r.Timeout)
	if err != nil || d <= 0 {
		return DefaultTimeout // Parse refuses such a file; defensive
	}
	return d
}

// Turns is r's turn limit, or DefaultMaxTurns when none is set.
func (r *Run) Turns() int {
	if r == nil || r.MaxTurns <= 0 {
		return DefaultMaxTurns
	}
	return r.MaxTurns
}

// parseRun reads the value of the run: key. A value of the wrong type or out
// of range makes the file unusable (a *ParseError, like every other key); an
// unknown key inside the block is a lint problem.
func parseRun(path string, v *yaml.Node) (*Run, []Problem, error) {
	fail := func(n *yaml.Node, format string, args ...any) (*Run, []Problem, error) {
		return nil, nil, &ParseError{Problem{Path: path, Line: n.Line + 1, Reason: "run: " + fmt.Sprintf(format, args...)}}
	}
	r := &Run{Hosts: []string{}, Secrets: []string{}, Tools: []string{}}
	if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		return r, nil, nil
	}
	if v.Kind != yaml.MappingNode {
		return fail(v, "must be a mapping with keys %s", strings.Join(runKeys, ", "))
	}
	var probs []Problem
	seen := map[string]bool{}
	list := func(k, n *yaml.Node, what string, check func(s string) (string, error)) ([]string, error) {
		out := []string{}
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			return out, nil
		}
		if n.Kind != yaml.SequenceNode {
			_, _, err := fail(k, "%s must be a list of %s", k.Value, what)
			return nil, err
		}
		dup := map[string]bool{}
		for _, it := range n.Content {
			s, ok := scalarString(it)
			if !ok || strings.TrimSpace(s) == "" {
				_, _, err := fail(it, "%s must be a list of %s", k.Value, what)
				return nil, err
			}
			c, err := check(s)
			if err != nil {
				_, _, err := fail(it, "%s: %v", k.Value, err)
				return nil, err
			}
			if !dup[c] {
				dup[c] = true
				out = append(out, c)
			}
		}
		return out, nil
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, n := v.Content[i], v.Content[i+1]
		if seen[k.Value] {
			return fail(k, "duplicate key %q", k.Value)
		}
		seen[k.Value] = true
		var err error
		switch k.Value {
		case "hosts":
			r.Hosts, err = list(k, n, "hosts (policy domains entries such as api.example.com or *.example.com:8443)", CheckHost)
		case "secrets":
			r.Secrets, err = list(k, n, "variable names", CheckSecret)
		case "tools":
			r.Tools, err = list(k, n, "Claude Code tool names or patterns", CheckTool)
		case "max_turns":
			t, aerr := strconv.Atoi(n.Value)
			if n.Kind != yaml.ScalarNode || aerr != nil || t < 1 {
				return fail(k, "max_turns must be a whole number greater than 0, got %q", n.Value)
			}
			r.MaxTurns = t
		case "timeout":
			d, perr := time.ParseDuration(n.Value)
			if n.Kind != yaml.ScalarNode || perr != nil || d <= 0 {
				return fail(k, "timeout must be a duration greater than 0 such as 20m or 1h30m, got %q", n.Value)
			}
			r.Timeout = n.Value
		case "max_cost_usd":
			v, perr := strconv.ParseFloat(n.Value, 64)
			if n.Kind != yaml.ScalarNode || perr != nil || !(v > 0 && v <= MaxCostLimit) {
				return fail(k, "max_cost_usd must be a number of US dollars greater than 0 and at most %d, such as 2.50, got %q", MaxCostLimit, n.Value)
			}
			r.MaxCostUSD = v
		default:
			probs = append(probs, Problem{Path: path, Line: k.Line + 1,
				Reason: fmt.Sprintf("run: unknown key %q (known: %s)", k.Value, strings.Join(runKeys, ", "))})
		}
		if err != nil {
			return nil, nil, err
		}
	}
	return r, probs, nil
}

// CheckHost validates a run host as the egress policy's domains entries are
// validated and returns its canonical pattern.
func CheckHost(s string) (string, error) {
	rule, err := policy.ParseRule(s)
	if err != nil {
		return "", err
	}
	return rule.Pattern, nil
}

// CheckSecret validates a secret's variable name.
func CheckSecret(s string) (string, error) {
	if !secretRe.MatchString(s) {
		return "", fmt.Errorf("%q is not a variable name (letters, digits and _, not starting with a digit)", s)
	}
	return s, nil
}

// CheckTool validates a Claude Code tool name or permission pattern.
func CheckTool(s string) (string, error) {
	if !toolRe.MatchString(s) {
		return "", fmt.Errorf("%q is not a Claude Code tool name or pattern (e.g. Read, Bash(git *), mcp__server__tool)", s)
	}
	return s, nil
}

// yamlBlock renders r as the lines of a run: block (without the "run:"
// line), each ending in eol.
func (r *Run) yamlBlock(eol string) string {
	var b strings.Builder
	b.WriteString("  hosts: " + tagsYAML(r.Hosts) + eol)
	b.WriteString("  secrets: " + tagsYAML(r.Secrets) + eol)
	b.WriteString("  tools: " + tagsYAML(r.Tools) + eol)
	if r.MaxTurns > 0 {
		fmt.Fprintf(&b, "  max_turns: %d%s", r.MaxTurns, eol)
	}
	if r.Timeout != "" {
		b.WriteString("  timeout: " + quote(r.Timeout) + eol)
	}
	if r.MaxCostUSD > 0 {
		b.WriteString("  max_cost_usd: " + FormatUSD(r.MaxCostUSD) + eol)
	}
	return b.String()
}

// FormatUSD writes a dollar amount as YAML and Claude Code's
// --max-budget-usd take it: the shortest decimal that reads back equal.
func FormatUSD(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
