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
//
// Taint follows the conversation. A turn whose session was tainted (it
// read an untrusted host, or it started tainted) leaves its reply in the
// record, and the next turn reads that reply: so the conversation is
// marked tainted, and every later turn of it starts tainted (what it
// changes waits for hobbs review) until the owner trusts the conversation
// again (TrustCommand, hobbs chat /trust) or starts it afresh
// (NewCommand). Text a message carries from someone else (channel.Quoted:
// a forwarded message, a quote, a reply to a message not the owner's) is
// untrusted input: its turn starts tainted, and the turn gets it apart
// from the owner's text.
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
	"github.com/hobbs-agent/hobbs/src/channel"
	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/image"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/launcher"
	"github.com/hobbs-agent/hobbs/src/plan"
	"github.com/hobbs-agent/hobbs/src/policy"
	"github.com/hobbs-agent/hobbs/src/provenance"
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

// Turn answers the owner's message text in conversation: TurnMessage of
// a message with nothing quoted.
func (t *Turns) Turn(ctx context.Context, conversation, text string) (string, error) {
	return t.TurnMessage(ctx, conversation, channel.Message{Text: text})
}

// TurnMessage answers the owner's message m in conversation: it plans a
// chat turn, runs it with the conversation kept so far and m on Claude
// Code's standard input, keeps the exchange, and returns the reply. A turn
// that gives no reply is an error saying why (the channel shows it);
// nothing is kept of it. Turns of one conversation (through one Turns)
// run one at a time, so each sees the one before; turns of different
// conversations run side by side. The turn starts tainted when the
// conversation is or m quotes someone else's text; the conversation is
// tainted from a turn whose session was.
func (t *Turns) TurnMessage(ctx context.Context, conversation string, m channel.Message) (string, error) {
	if err := ValidID(conversation); err != nil {
		return "", err
	}
	if err := checkMessage(m); err != nil {
		return "", err
	}
	unlock := t.hold(conversation)
	defer unlock()
	store := Open(t.Instance)
	if len(m.Quoted) == 0 { // a quoted "/new" is someone else's text, not a command
		switch strings.TrimSpace(m.Text) {
		case NewCommand:
			return t.reset(store, conversation)
		case TrustCommand:
			return t.trust(store, conversation)
		}
	}
	conv, err := store.Load(conversation)
	if err != nil {
		return "", err
	}
	input, err := Input(conv, m)
	if err != nil {
		return "", err
	}
	untrusted := untrustedWhy(conv, m)
	p, err := t.plan(conversation, strings.Join(untrusted, "; "))
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
	var ended *provenance.Session
	rt.Ended = func(s provenance.Session) { ended = &s }
	res, err := run(ctx, p, rt, input)
	d := map[string]any{"session": p.Session, "message_bytes": len(m.Text), "reply_bytes": len(res.Reply), "exit": res.Code}
	if len(m.Quoted) > 0 {
		d["quoted"] = len(m.Quoted)
	}
	if r := res.Result; r != nil {
		d["claude_result"], d["turns"], d["cost_usd"] = r.Subtype, r.NumTurns, r.TotalCostUSD
	}
	if err != nil {
		t.Runtime.Audit.Record(audit.Entry{Event: "chat.turn", Subject: conversation, Detail: d}, err)
		return "", err
	}
	turn := Turn{Owner: m.Text, Quoted: m.Quoted, Reply: res.Reply}
	switch {
	case ended == nil: // what the turn read is not known
		turn.Tainted = []string{"session " + p.Session + ": its provenance was not recorded"}
	case ended.Tainted:
		turn.Tainted = []string{"session " + p.Session + ": " + strings.Join(ended.Why, ", ")}
	}
	if len(turn.Tainted) > 0 {
		d["tainted"] = turn.Tainted
	}
	reply := res.Reply
	if len(turn.Tainted) > 0 && len(conv.Tainted) == 0 {
		reply += "\n\n(" + TaintedNote + ")"
	}
	if _, err := store.Append(conversation, turn); err != nil {
		// The reply is the owner's all the same; the next turn will not
		// see this exchange, and the owner is told so.
		d["kept"] = false
		t.Runtime.Audit.Record(audit.Entry{Event: "chat.turn", Subject: conversation, Detail: d}, err)
		return reply + "\n\n(Hobbs could not keep this exchange, so the next message will not see it: " + firstLine(err.Error()) + ")", nil
	}
	d["kept"] = true
	t.Runtime.Audit.Record(audit.Entry{Event: "chat.turn", Subject: conversation, Outcome: "ok", Detail: d}, nil)
	return reply, nil
}

// TaintedNote ends the reply of the turn that taints its conversation.
const TaintedNote = "This turn read untrusted input: what it changed waits for hobbs review, and so will what the " +
	"next turns of this conversation change, until you send " + TrustCommand + " (or " + NewCommand + " to start afresh)."

// untrustedWhy says why a turn of conv with message m starts tainted:
// the conversation holds a tainted turn, m quotes someone else's text.
func untrustedWhy(conv Conversation, m channel.Message) []string {
	var why []string
	if len(conv.Tainted) > 0 {
		why = append(why, "conversation "+conv.ID+" holds a tainted turn ("+conv.Tainted[0]+")")
	}
	for _, q := range m.Quoted {
		w := "the message carries " + q.Kind + " text"
		if q.From != "" {
			w += " from " + q.From
		}
		why = append(why, w)
	}
	return why
}

// NewCommand, as a turn's whole message, starts the conversation afresh
// instead of running a turn (Store.Reset).
const NewCommand = "/new"

// TrustCommand, as a turn's whole message, trusts the conversation again
// instead of running a turn (Store.Trust): its later turns no longer start
// tainted.
const TrustCommand = "/trust"

func (t *Turns) trust(store Store, conversation string) (string, error) {
	was, err := store.Trust(conversation)
	t.Runtime.Audit.Record(audit.Entry{Event: "chat.trust", Subject: conversation, Detail: map[string]any{"was": was}}, err)
	if err != nil {
		return "", err
	}
	if len(was) == 0 {
		return "This conversation was not tainted: nothing to do.", nil
	}
	return "This conversation is trusted again: its next turns are not held for review for what earlier turns read " +
		"(" + was[0] + "). What those turns changed still waits for hobbs review.", nil
}

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
// The turn starts tainted when the conversation is.
func (t *Turns) Plan(conversation string) (*plan.Plan, error) {
	if err := ValidID(conversation); err != nil {
		return nil, err
	}
	conv, err := Open(t.Instance).Load(conversation)
	if err != nil {
		return nil, err
	}
	return t.plan(conversation, strings.Join(untrustedWhy(conv, channel.Message{}), "; "))
}

// plan is the plan of a turn of conversation, tainted from its start for
// the reason untrusted ("": not).
func (t *Turns) plan(conversation, untrusted string) (*plan.Plan, error) {
	spec := plan.RunSpec{Kind: plan.KindChat, Name: launcher.NewName(), Image: t.Image, Policy: t.Policy,
		Chat: &plan.ChatSpec{Conversation: conversation, MaxTurns: t.MaxTurns, Timeout: t.Timeout, Untrusted: untrusted}}
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

// checkMessage refuses a message a turn cannot take: empty (no text of
// the owner's and none quoted), longer than MaxMessage in all, or not
// UTF-8 text.
func checkMessage(m channel.Message) error {
	size, empty := len(m.Text), strings.TrimSpace(m.Text) == ""
	valid := utf8.ValidString(m.Text)
	for _, q := range m.Quoted {
		size += len(q.Kind) + len(q.From) + len(q.Text)
		empty = empty && strings.TrimSpace(q.Text) == ""
		valid = valid && utf8.ValidString(q.Kind) && utf8.ValidString(q.From) && utf8.ValidString(q.Text)
	}
	switch {
	case empty:
		return errs.Usagef("the message is empty")
	case size > MaxMessage:
		return errs.Usagef("the message is %d bytes long; a chat turn takes at most %d", size, MaxMessage)
	case !valid:
		return errs.Usagef("the message is not UTF-8 text")
	}
	return nil
}

// input is what a turn's Claude Code reads on its standard input
// (plan.ChatPrompt says how to read it).
type input struct {
	Conversation string           `json:"conversation"`
	Turns        []inputTurn      `json:"turns"`
	Message      string           `json:"message"`
	Quoted       []channel.Quoted `json:"quoted,omitempty"` // someone else's text the message carries
}

type inputTurn struct {
	At        string           `json:"at"`
	Owner     string           `json:"owner"`
	Quoted    []channel.Quoted `json:"quoted,omitempty"`
	Hobbs     string           `json:"hobbs"`
	Untrusted bool             `json:"untrusted,omitempty"` // the turn read untrusted input
}

// Input is message m's standard input: conversation c's kept turns and m,
// as JSON. Every text is a JSON string, so nothing in a reply or a message
// can end it and pass for another turn, and what m quotes is apart from
// the owner's text.
func Input(c Conversation, m channel.Message) ([]byte, error) {
	in := input{Conversation: c.ID, Turns: []inputTurn{}, Message: m.Text, Quoted: m.Quoted}
	for _, t := range c.Turns {
		in.Turns = append(in.Turns, inputTurn{At: t.At.UTC().Format(time.RFC3339), Owner: t.Owner, Quoted: t.Quoted,
			Hobbs: t.Reply, Untrusted: len(t.Tainted) > 0})
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
