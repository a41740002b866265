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
	// names it (the channel's chat), text is the owner's message; the reply
	// is what to send back.
	Chat(ctx context.Context, conversation, text string) (string, error)
}

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
