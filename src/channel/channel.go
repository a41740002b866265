// Package channel is what a messaging channel (Telegram first) and the
// service that owns it (hobbs serve) say to each other: the service hands
// the channel notices to deliver to the paired owner, and the channel asks
// the service, through Host, to answer the owner's commands, button presses
// and chat turns. A channel never starts a run or changes state itself;
// everything it may do goes through Host, which checks and audits it.
package channel

import (
	"context"
	"time"
)

// Notice is one message to the owner: a run's end, a failure, a missed
// schedule, an approval waiting. ID is unique per notice (for example
// "task:20261126-3:end") so that a channel that retries a delivery after a
// crash or an outage sends it once.
type Notice struct {
	ID      string   `json:"id"`
	Text    string   `json:"text"`
	Buttons []Action `json:"buttons,omitempty"`
	// Expires, when set, is when its buttons stop counting (a held
	// request's question ends with its hold); otherwise the channel's own
	// limit applies.
	Expires time.Time `json:"expires,omitzero"`
}

// Action is what a button asks for. The channel binds it to the message it
// was sent with, lets only the paired owner press it, once, before it
// expires, and then hands it to Host.Act.
type Action struct {
	Kind     string `json:"kind"`               // one of the Act* kinds
	Label    string `json:"label"`              // the button's text
	Task     string `json:"task,omitempty"`     // ActApprove, ActReject: the task under review
	Playbook string `json:"playbook,omitempty"` // ActAllowHost, ActDenyHost
	Host     string `json:"host,omitempty"`     // ActAllowHost, ActDenyHost
	Question string `json:"question,omitempty"` // ActAnswer: the held request's question id
	Answer   string `json:"answer,omitempty"`   // ActAnswer: once, session, always or deny
	// By is who pressed it, as the channel names them (set by the channel
	// when it hands the press on, never taken from a notice).
	By string `json:"by,omitempty"`
}

// The kinds of Action.
const (
	ActApprove   = "approve"    // approve a supervised run's result (task review)
	ActReject    = "reject"     // reject it
	ActAllowHost = "allow-host" // allow Host for Playbook's runs (hobbs playbook allow)
	ActDenyHost  = "deny-host"  // leave it refused
	ActAnswer    = "answer"     // answer a held request's question (package approval)
)

// Host is the service as a channel sees it. Every method is called only for
// the paired owner; the channel has already dropped everyone else.
type Host interface {
	// Status answers /status: sessions, queued and running runs, next schedules.
	Status(ctx context.Context) (string, error)
	// Runs answers /runs: the latest runs and their outcomes.
	Runs(ctx context.Context) (string, error)
	// Stop answers /stop NAME: stops a session or a queued or running run.
	Stop(ctx context.Context, name string) (string, error)
	// Act carries out a pressed button and returns the text to show.
	Act(ctx context.Context, a Action) (string, error)
	// Chat is one turn of the owner's conversation with Hobbs: conversation
	// names it (the channel's chat), m is the owner's message; the reply is
	// what to send back.
	Chat(ctx context.Context, conversation string, m Message) (string, error)
}

// Message is one message of the owner's to a conversation. Text is what
// the owner wrote. Quoted is the text the message carries from elsewhere —
// a forwarded message's whole text, a quote, the message it replies to
// when that is not the owner's own — which is untrusted input to its turn,
// never the owner's words: a channel never merges it into Text.
type Message struct {
	Text   string   `json:"text"`
	Quoted []Quoted `json:"quoted,omitempty"`
}

// Quoted is someone else's text a message carries.
type Quoted struct {
	Kind string `json:"kind"`           // QuoteForwarded, QuoteQuote, QuoteReply
	From string `json:"from,omitempty"` // who wrote it, as the channel names them ("" when it does not say)
	Text string `json:"text,omitempty"`
}

// The kinds of Quoted.
const (
	QuoteForwarded = "forwarded" // a message the owner forwarded
	QuoteQuote     = "quote"     // part of another message the owner quoted
	QuoteReply     = "reply"     // the message the owner replied to
)

// Channel is a way to reach the owner.
type Channel interface {
	// Name is the channel's config name ("telegram").
	Name() string
	// Run receives the owner's messages and delivers notices until ctx ends.
	Run(ctx context.Context, h Host) error
	// Deliver queues a notice durably and returns; Run sends it, retrying
	// with backoff until it is acknowledged. A notice is never dropped.
	Deliver(n Notice) error
}
