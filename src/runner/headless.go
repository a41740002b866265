package runner

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/launcher"
	"github.com/hobbs-agent/hobbs/src/plan"
	"github.com/hobbs-agent/hobbs/src/playbook"
	"github.com/hobbs-agent/hobbs/src/policy"
	"github.com/hobbs-agent/hobbs/src/task"
)

// A headless playbook run is a session without a terminal whose plan
// (plan.New: KindPlaybook, KindScheduled or KindTrigger) has Claude Code in print mode
// carry out the playbook with the run-playbook skill, within the approved
// allowance: its proxy enforces a policy of the run's own, it gets only the
// declared secrets, Claude Code its own fresh state, the declared tools and
// turn and cost limits, and the session is stopped at the time limit (exit
// 124). The run is a task in the task log: started before the session,
// finished with the outcome the run's JSON result and report decide
// (RunOutcome), Claude Code's figures (result, turns, cost), the hosts the
// proxy refused it (each with the command that would allow it), and the
// final message, whose Lessons become memories.

// maxTranscript is how much of the run's output the task record keeps
// (the end of it: the final message comes last).
const maxTranscript = 256 << 10

// Headless is one headless run of a playbook.
type Headless struct {
	Plan  *plan.Plan
	Grant playbook.Allowance
	// Runtime carries the plan out; its Stdout gets the run's output too.
	Runtime launcher.Runtime
	Tasks   task.Log
	// Remember, when set, turns the final message's Lessons into memories.
	Remember task.Rememberer
	Status   func(format string, args ...any)
	// Words words the run's notices (kinds.go) for Status.
	Words func(errs.Advice) string
	// Task, when set, is the run's task, started already (hobbs serve
	// answers a webhook with it while the run waits in its queue);
	// otherwise Run starts one.
	Task string
	// Audit records what the run's end changes (a host answered Always).
	Audit *audit.Logger
}

// Finished is how a headless run ended, as its task records it.
type Finished struct {
	Task    string
	Code    int // the session's exit code (1 for a run whose outcome is failed though Claude Code exited 0)
	Outcome Outcome
	Review  bool // a supervised run: its result waits for the user's review
	// Denied are the targets the proxy refused while the run ran, as
	// hobbs playbook allow names them (playbook.AllowTarget).
	Denied []string
	// Recorded: the task was finished (task.Log.Done) with the outcome.
	Recorded bool
}

// RunTask carries the run out as a task and returns how it ended; the
// task is finished either way (a failure to finish it is a warning on
// Status). A run whose outcome is failed though Claude Code exited 0 has
// exit code 1.
func (h Headless) RunTask(ctx context.Context) (Finished, error) {
	in, spec := h.Plan.In(), h.Grant
	id := h.Task
	if id == "" {
		t, err := h.Tasks.Start(task.RunTitle(spec.Playbook), "hobbs", spec.Playbook)
		if err != nil {
			return Finished{}, err
		}
		id = t.ID
	}
	h.Status("playbook %s: task %s started", spec.Playbook, id)
	out := &tailBuffer{max: maxTranscript}
	rt := h.Runtime
	rt.Stdin = strings.NewReader("")
	if rt.Stdout != nil {
		rt.Stdout = io.MultiWriter(rt.Stdout, out)
	} else {
		rt.Stdout = out
	}
	start := time.Now()
	code, runErr := launcher.Execute(ctx, h.Plan, rt)
	h.applyAlways()

	o := RunOutcome(code, runErr, []byte(out.String()))
	denied := deniedSince(in, start)
	report := runReport(spec, denied, code, runErr, o)
	var lessons task.Rememberer
	if len(task.Lessons(o.Report)) > 0 {
		lessons = h.Remember
		report += "\n" + lessonsSection(o.Report)
	}
	review := ""
	// A supervised run's result waits for the user; a run that never got
	// to Claude Code (its session failed before a result) has none.
	if spec.Stage == "supervised" && (runErr == nil || o.Result != nil || code == errs.Timeout) {
		review = task.ReviewPending
	}
	done := task.DoneOptions{Outcome: o.Status, Retro: report, Remember: lessons, Review: review}
	if r := o.Result; r != nil {
		done.ClaudeResult, done.Turns, done.CostUSD = r.Subtype, r.NumTurns, r.TotalCostUSD
	}
	recorded := true
	if _, err := h.Tasks.Done(id, done); err != nil {
		h.Status("hobbs: warning: task %s: %v", id, err)
		recorded = false
	}
	what := o.Status
	if o.Why != "" {
		what += " (" + o.Why + ")"
	}
	h.Status("%s", h.word(TaskEnded, "playbook", spec.Playbook, "task", id, "what", what))
	if review != "" {
		h.Status("%s", h.word(ReviewRun, "playbook", spec.Playbook, "task", id))
	}
	if runErr == nil && code == 0 && o.Status != task.OK {
		code = 1
	}
	f := Finished{Task: id, Code: code, Outcome: o, Review: review != "", Recorded: recorded}
	for _, d := range denied {
		f.Denied = append(f.Denied, playbook.AllowTarget(d.Host, d.Port))
	}
	return f, runErr
}

// runReport is the run's part of its task record.
func runReport(spec playbook.Allowance, denied []policy.Denied, code int, runErr error, o Outcome) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Run\n\n- playbook: %s (%s)\n- exit: %d\n", spec.Playbook, spec.Stage, code)
	if runErr != nil {
		fmt.Fprintf(&b, "- error: %s\n", firstLine(runErr.Error()))
	}
	fmt.Fprintf(&b, "- outcome: %s", o.Status)
	if o.Why != "" {
		fmt.Fprintf(&b, " — %s", o.Why)
	}
	b.WriteString("\n")
	if r := o.Result; r != nil {
		session := r.SessionID
		if session == "" {
			session = "-"
		}
		fmt.Fprintf(&b, "- claude: %s, %d turns, $%s, session %s\n", r.Subtype, r.NumTurns, playbook.FormatUSD(r.TotalCostUSD), session)
	}
	cost := "no cap"
	if spec.MaxCostUSD > 0 {
		cost = "$" + playbook.FormatUSD(spec.MaxCostUSD)
	}
	if !spec.Declared {
		fmt.Fprintf(&b, "- limits: the instance defaults (the playbook has no run: block); max_turns %d; timeout %s\n", spec.MaxTurns, spec.TimeoutText)
	} else {
		fmt.Fprintf(&b, "- limits: hosts %s; secrets %s; tools %s; max_turns %d; max_cost_usd %s; timeout %s\n",
			listOrNone(spec.Hosts), listOrNone(spec.Secrets), listOrNone(spec.Tools), spec.MaxTurns, cost, spec.TimeoutText)
	}
	if len(denied) > 0 {
		b.WriteString("\n## Denied by the proxy\n\n")
		for _, d := range denied {
			fmt.Fprintf(&b, "- %s — to allow it: %s\n", d.Target, strings.Join(spec.AllowCommands(d.Host, d.Port), " ; "))
		}
	}
	if t := strings.TrimSpace(o.Report); t != "" {
		b.WriteString("\n## Final output\n\n```\n" + strings.ReplaceAll(t, "```", "'''") + "\n```\n")
	}
	return b.String()
}

// deniedSince are the targets the proxies of in refused by default since
// start (the run's proxy writes the instance's egress audit log; a session
// running at the same time may add its own).
func deniedSince(in instance.Instance, start time.Time) []policy.Denied {
	f, err := in.FS().Open(in.EgressAuditLog())
	if err != nil {
		return nil
	}
	defer f.Close()
	return policy.DeniedSince(f, start)
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "(none)"
	}
	return strings.Join(s, ", ")
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

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// word is the run's notice k with facts kv as Words words it ("" without
// words).
func (h Headless) word(k errs.Kind, kv ...string) string {
	if h.Words == nil {
		return ""
	}
	return h.Words(errs.NewAdvice(k, kv...))
}
