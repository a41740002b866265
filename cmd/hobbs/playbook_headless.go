package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/playbook"
	"github.com/hobbs-agent/hobbs/src/task"
)

// A headless playbook run is a session like hobbs run's, without a
// terminal, whose command is Claude Code in print mode told to carry out
// the playbook with the run-playbook framework skill, within the run's
// spec (playbook.RunSpec): its proxy enforces a policy of the run's own
// (the declared hosts the instance allows, Claude's own service, the
// instance's deny entries, allow_private ranges and request rules), it
// gets only the declared secrets, Claude Code gets the declared tools and
// turn limit, and the session is stopped at the time limit (exit 124). The
// run is a task in the task log: started before the session, finished
// with its outcome, the hosts the proxy refused it (each with the command
// that would allow it), and the final message, whose Lessons become
// memories.

// maxTranscript is how much of the run's output the task record keeps
// (the end of it: the final message comes last).
const maxTranscript = 256 << 10

// runPlaybookHeadless is the headless runner (playbook.Runner) with this
// app's terminal, engine and settings.
func (a *app) runPlaybookHeadless(ctx context.Context, in instance.Instance, spec playbook.RunSpec) error {
	if err := refuseRoot(); err != nil {
		return err
	}
	opts := runOptions{headless: true, timeout: spec.Timeout, command: claudeCommand(spec)}
	if spec.Declared {
		pol, err := runPolicy(in, spec)
		if err != nil {
			return err
		}
		opts.policy = pol
		opts.secrets = append([]string{}, spec.Secrets...)
	}
	log := task.Open(in, a.audit(in))
	t, err := log.Start("playbook run: "+spec.Playbook, "hobbs", spec.Playbook)
	if err != nil {
		return err
	}
	a.status("playbook %s: task %s started", spec.Playbook, t.ID)
	out := &tailBuffer{max: maxTranscript}
	opts.stdout = io.MultiWriter(a.out, out)
	start := time.Now()
	code, runErr := a.runSession(ctx, opts)

	outcome := task.OK
	if runErr != nil || code != 0 {
		outcome = task.Failed
	}
	transcript := out.String()
	report := runReport(in, spec, start, code, runErr, transcript)
	var lessons task.Rememberer
	if len(task.Lessons(transcript)) > 0 {
		lessons = rememberLessons(a, in)
		report += "\n" + lessonsSection(transcript)
	}
	review := ""
	if spec.Stage == "supervised" {
		review = task.ReviewPending // a supervised run's result waits for the user
	}
	if _, err := log.Done(t.ID, task.DoneOptions{Outcome: outcome, Retro: report, Remember: lessons, Review: review}); err != nil {
		a.warn("task %s: %v", t.ID, err)
	}
	a.status("playbook %s: task %s %s (hobbs task show %s)", spec.Playbook, t.ID, outcome, t.ID)
	if review != "" {
		a.status("playbook %s is supervised: review the run, then hobbs task review %s --approve (or --reject)", spec.Playbook, t.ID)
	}
	if runErr != nil {
		return runErr
	}
	if code != 0 {
		return exitStatus(code)
	}
	return nil
}

// claudeCommand is the run's command: Claude Code in print mode with the
// playbook's prompt, turn limit and tools.
func claudeCommand(spec playbook.RunSpec) []string {
	prompt := fmt.Sprintf("/run-playbook %s\n\nCarry out the playbook %q with the run-playbook skill: "+
		"read it with `hobbs playbook show %s`, follow its steps, and end with the report the skill describes.",
		spec.Playbook, spec.Playbook, spec.Playbook)
	cmd := []string{"claude", "-p", prompt}
	if spec.MaxTurns > 0 {
		cmd = append(cmd, "--max-turns", strconv.Itoa(spec.MaxTurns))
	}
	if spec.Declared {
		// --tools is the set of built-in tools the run has at all;
		// --allowedTools approves the uses the block names ("Bash(git *)"
		// approves those commands only: in print mode nobody can approve
		// another, so it is refused).
		allowed := append(append([]string{}, spec.Tools...), runPlaybookTools...)
		cmd = append(cmd, "--tools", strings.Join(builtinTools(allowed), ","), "--allowedTools")
		cmd = append(cmd, allowed...)
	}
	return cmd
}

// runPlaybookTools are what the run-playbook skill itself uses, whatever
// the block declares: reading the playbook and the memories.
var runPlaybookTools = []string{"Bash(hobbs playbook show *)", "Bash(hobbs memory search *)"}

// builtinTools are the built-in tool names of run.tools entries ("Bash" of
// "Bash(git *)"), without MCP tools, which --tools does not take.
func builtinTools(tools []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range tools {
		name, _, _ := strings.Cut(t, "(")
		name = strings.TrimSpace(name)
		if name == "" || strings.HasPrefix(name, "mcp__") || seen[name] {
			continue
		}
		seen[name] = true
		out = append(out, name)
	}
	return out
}

// runPolicy is the proxy policy of a run with a run: block.
func runPolicy(in instance.Instance, spec playbook.RunSpec) ([]byte, error) {
	eff, err := effectivePolicy(in)
	if err != nil {
		return nil, err
	}
	doc := struct {
		Services     []string            `yaml:"services"`
		Domains      []string            `yaml:"domains"`
		Deny         []string            `yaml:"deny"`
		AllowPrivate []string            `yaml:"allow_private"`
		Rules        map[string][]string `yaml:"rules,omitempty"`
	}{Services: []string{"claude"}, Domains: nonNil(spec.Hosts), Deny: nonNil(spec.Deny), AllowPrivate: nonNil(spec.AllowPrivate)}
	for _, hr := range eff.Rules {
		if doc.Rules == nil {
			doc.Rules = map[string][]string{}
		}
		for _, rr := range hr.Requests {
			doc.Rules[hr.Host.Pattern] = append(doc.Rules[hr.Host.Pattern], rr.Text)
		}
	}
	b, err := yaml.Marshal(doc)
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "run policy")
	}
	return append([]byte("# The policy of a headless run of playbook "+spec.Playbook+" (hobbs playbook run).\n"), b...), nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// runReport is the run's part of its task record.
func runReport(in instance.Instance, spec playbook.RunSpec, start time.Time, code int, runErr error, transcript string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Run\n\n- playbook: %s (%s)\n- exit: %d\n", spec.Playbook, spec.Stage, code)
	if runErr != nil {
		fmt.Fprintf(&b, "- error: %s\n", firstLineOf(runErr.Error()))
	}
	if !spec.Declared {
		b.WriteString("- limits: the instance defaults (the playbook has no run: block)\n")
	} else {
		fmt.Fprintf(&b, "- limits: hosts %s; secrets %s; tools %s; max_turns %d; timeout %s\n",
			listOrNone(spec.Hosts), listOrNone(spec.Secrets), listOrNone(spec.Tools), spec.MaxTurns, spec.TimeoutText)
	}
	denied := deniedSince(in, start)
	if len(denied) > 0 {
		b.WriteString("\n## Denied by the proxy\n\n")
		for _, d := range denied {
			fmt.Fprintf(&b, "- %s — to allow it: %s\n", d.target, strings.Join(spec.AllowCommands(d.host, d.port), " ; "))
		}
	}
	if t := strings.TrimSpace(transcript); t != "" {
		b.WriteString("\n## Final output\n\n```\n" + strings.ReplaceAll(t, "```", "'''") + "\n```\n")
	}
	return b.String()
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "(none)"
	}
	return strings.Join(s, ", ")
}

func firstLineOf(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// lessonsSection is the transcript's Lessons bullets as a section that
// task.Lessons reads again when the task is finished.
func lessonsSection(transcript string) string {
	var b strings.Builder
	b.WriteString("## Lessons\n\n")
	for _, l := range task.Lessons(transcript) {
		b.WriteString("- " + l + "\n")
	}
	return b.String()
}

type deniedHost struct {
	target string
	host   string
	port   int
}

// deniedSince reads the proxy's audit log for the hosts no rule allowed
// since start (the run's proxy writes there; a session running at the same
// time may add its own).
func deniedSince(in instance.Instance, start time.Time) []deniedHost {
	data, err := in.FS().ReadFile(filepath.Join("logs", "egress", "audit.log"))
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	var out []deniedHost
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var l struct {
			Time    time.Time `json:"time"`
			Event   string    `json:"event"`
			Subject string    `json:"subject"`
			Detail  struct {
				Rule string `json:"rule"`
			} `json:"detail"`
		}
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.Time.Before(start.Add(-time.Second)) ||
			l.Event != "egress.deny" || l.Detail.Rule != "default-deny" || seen[l.Subject] {
			continue
		}
		host, port, err := net.SplitHostPort(l.Subject)
		if err != nil {
			continue
		}
		p, _ := strconv.Atoi(port)
		seen[l.Subject] = true
		out = append(out, deniedHost{target: l.Subject, host: host, port: p})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].target < out[j].target })
	return out
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
