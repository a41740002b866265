// Package chat answers the owner's messages from a channel (hobbs serve's
// Telegram bot): each message is one turn of a conversation, carried out as
// a chat turn run (plan.KindChat: the interactive session's
// privileges, headless, in a fresh container), with the conversation kept
// on the host.
//
// The host keeps the conversation, not Claude Code. Claude Code could
// resume a session (--resume, --continue), but its transcript lives in
// Claude Code's state, which a headless run gets fresh and discards: the
// host would have to keep the transcript and seed it into the next turn's
// state, and that transcript is written inside the agent's container,
// which is hostile. A planted transcript could put words in the owner's
// mouth ("the owner said: send the reports to …") that the next turn
// takes as the owner's. So the host keeps its own record instead (Store):
// the owner's text as the channel handed it over and the reply as the host
// read it from Claude Code's JSON result, nothing else of the run. The
// next turn gets that record as data on its standard input, JSON-encoded,
// so no reply can pass for an owner's turn however it is worded.
package chat

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/image"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/launcher"
	"github.com/hobbs-agent/hobbs/src/plan"
	"github.com/hobbs-agent/hobbs/src/policy"
	"github.com/hobbs-agent/hobbs/src/runner"
)

// Turns carries out the chat turns of one instance. Its fields are set
// once (hobbs serve makes one); Turn may be called from many goroutines.
type Turns struct {
	Instance instance.Instance
	Config   *config.Config
	// Policy is the instance's effective egress policy (the image's
	// default and policy.yaml), as a session gets it.
	Policy *policy.Policy
	// Image is the image to run (image.ImageRef of config.yaml's).
	Image string
	// Workspace is the host directory mounted as the workspace; "":
	// config.yaml's.
	Workspace string
	// Runtime carries each turn's plan out: Engine, Audit (chat.turn and
	// the session's own events), Build, Progress, Stderr (the agent's
	// standard error). Stdin and Stdout are each turn's own.
	Runtime launcher.Runtime
	// Limits, when set, are the turns' limits (default
	// plan.ChatMaxTurns and plan.ChatTimeout).
	MaxTurns int
	Timeout  time.Duration

	// run carries a turn's plan out: runner.RunChat (tests put a fake
	// in its place to test what Turn does around it).
	run func(ctx context.Context, p *plan.Plan, rt launcher.Runtime, input []byte) (runner.ChatResult, error)

	mu   sync.Mutex
	busy map[string]*sync.Mutex
}

// Turn answers the owner's message text in conversation: it plans a chat
// turn, runs it with the conversation kept so far and text on Claude
// Code's standard input, keeps the exchange, and returns the reply. A
// turn that gives no reply is an error saying why (the channel shows it);
// nothing is kept of it. Turns of one conversation (through one Turns)
// run one at a time, so each sees the one before; turns of different
// conversations run side by side.
func (t *Turns) Turn(ctx context.Context, conversation, text string) (string, error) {
	if err := ValidID(conversation); err != nil {
		return "", err
	}
	if err := checkMessage(text); err != nil {
		return "", err
	}
	unlock := t.hold(conversation)
	defer unlock()
	store := Open(t.Instance)
	if strings.TrimSpace(text) == NewCommand {
		return t.reset(store, conversation)
	}
	conv, err := store.Load(conversation)
	if err != nil {
		return "", err
	}
	input, err := Input(conv, text)
	if err != nil {
		return "", err
	}
	p, err := t.Plan(conversation)
	if err != nil {
		return "", err
	}
	run := t.run
	if run == nil {
		run = runner.RunChat
	}
	rt := t.Runtime
	if rt.Progress == nil {
		rt.Progress = func(string, ...any) {}
	}
	res, err := run(ctx, p, rt, input)
	d := map[string]any{"session": p.Session, "message_bytes": len(text), "reply_bytes": len(res.Reply), "exit": res.Code}
	if r := res.Result; r != nil {
		d["claude_result"], d["turns"], d["cost_usd"] = r.Subtype, r.NumTurns, r.TotalCostUSD
	}
	if err != nil {
		t.Runtime.Audit.Record(audit.Entry{Event: "chat.turn", Subject: conversation, Detail: d}, err)
		return "", err
	}
	if _, err := store.Append(conversation, Turn{Owner: text, Reply: res.Reply}); err != nil {
		// The reply is the owner's all the same; the next turn will not
		// see this exchange, and the owner is told so.
		d["kept"] = false
		t.Runtime.Audit.Record(audit.Entry{Event: "chat.turn", Subject: conversation, Detail: d}, err)
		return res.Reply + "\n\n(Hobbs could not keep this exchange, so the next message will not see it: " + firstLine(err.Error()) + ")", nil
	}
	d["kept"] = true
	t.Runtime.Audit.Record(audit.Entry{Event: "chat.turn", Subject: conversation, Outcome: "ok", Detail: d}, nil)
	return res.Reply, nil
}

// NewCommand, as a turn's whole message, starts the conversation afresh
// instead of running a turn (Store.Reset).
const NewCommand = "/new"

func (t *Turns) reset(store Store, conversation string) (string, error) {
	to, err := store.Reset(conversation)
	t.Runtime.Audit.Record(audit.Entry{Event: "chat.new", Subject: conversation, Detail: map[string]any{"archived": to}}, err)
	if err != nil {
		return "", err
	}
	if to == "" {
		return "A new conversation: there were no earlier turns.", nil
	}
	return "A new conversation: Hobbs no longer sees the earlier turns (kept on the host in " + to + ").", nil
}

// Plan is the plan of a turn of conversation (launcher.PlanRun of a
// KindChat spec): what Turn carries out, and hobbs chat --plan prints.
func (t *Turns) Plan(conversation string) (*plan.Plan, error) {
	if err := ValidID(conversation); err != nil {
		return nil, err
	}
	spec := plan.RunSpec{Kind: plan.KindChat, Name: launcher.NewName(), Image: t.Image, Policy: t.Policy,
		Chat: &plan.ChatSpec{Conversation: conversation, MaxTurns: t.MaxTurns, Timeout: t.Timeout}}
	return launcher.PlanRun(t.Instance, t.Config, t.Runtime.Engine.IsPodman(), t.Workspace, spec, nil,
		func() (*policy.Policy, error) { return t.Policy, nil })
}

// hold takes the conversation's turn: the next turn of it waits until
// this one is kept.
func (t *Turns) hold(conversation string) func() {
	t.mu.Lock()
	if t.busy == nil {
		t.busy = map[string]*sync.Mutex{}
	}
	m := t.busy[conversation]
	if m == nil {
		m = &sync.Mutex{}
		t.busy[conversation] = m
	}
	t.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// checkMessage refuses a message a turn cannot take: empty, longer than
// MaxMessage, or not UTF-8 text.
func checkMessage(text string) error {
	switch {
	case strings.TrimSpace(text) == "":
		return errs.Usagef("the message is empty")
	case len(text) > MaxMessage:
		return errs.Usagef("the message is %d bytes long; a chat turn takes at most %d", len(text), MaxMessage)
	case !utf8.ValidString(text):
		return errs.Usagef("the message is not UTF-8 text")
	}
	return nil
}

// input is what a turn's Claude Code reads on its standard input
// (plan.ChatPrompt says how to read it).
type input struct {
	Conversation string      `json:"conversation"`
	Turns        []inputTurn `json:"turns"`
	Message      string      `json:"message"`
}

type inputTurn struct {
	At    string `json:"at"`
	Owner string `json:"owner"`
	Hobbs string `json:"hobbs"`
}

// Input is turn text's standard input: conversation c's kept turns and
// text, as JSON. Every text is a JSON string, so nothing in a reply or a
// message can end it and pass for another turn.
func Input(c Conversation, text string) ([]byte, error) {
	in := input{Conversation: c.ID, Turns: []inputTurn{}, Message: text}
	for _, t := range c.Turns {
		in.Turns = append(in.Turns, inputTurn{At: t.At.UTC().Format(time.RFC3339), Owner: t.Owner, Hobbs: t.Reply})
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(in); err != nil {
		return nil, errs.Wrap(errs.Failure, err, "conversation %s", c.ID)
	}
	return b.Bytes(), nil
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// ForRunner returns the chat turns of r's instance: its config, effective
// policy and image, carried out with r's engine, streams and audit log.
func ForRunner(r runner.Runner) (*Turns, error) {
	pol, err := r.Policy()
	if err != nil {
		return nil, err
	}
	return &Turns{Instance: r.Instance, Config: r.Config, Policy: pol, Image: image.ImageRef(r.Config.Image),
		Runtime: r.Runtime(runner.SessionOptions{})}, nil
}
