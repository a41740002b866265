package plan

import "time"

// A chat turn (KindChat) is one message of the owner's conversation with
// Hobbs from a channel (hobbs serve's Telegram bot), answered by a headless
// Claude Code turn. It has the interactive session's privileges — the
// instance's egress policy whole, every secret config.yaml maps or binds,
// the managed settings' allow rules (the framework skills' hobbs commands)
// — but runs as a headless run does: no terminal, Claude Code in print mode
// with its own fresh state (the sign-in alone, from the seed), a turn limit
// and a time limit. No one is there to approve a tool use, so it runs in
// dontAsk mode: what the managed settings do not approve is denied, not
// asked about (docs/identity.md).
//
// The prompt on the command line is fixed (ChatPrompt). The conversation —
// the turns the host recorded and the owner's new message, as JSON — goes
// to Claude Code's standard input, Claude Code's documented way to give
// print mode content ("cat file | claude -p query"): the owner's text is
// never a command-line argument, so it is neither in the engine's
// container configuration nor in any process list.

// ChatSpec is a chat turn's conversation and limits.
type ChatSpec struct {
	// Conversation names the conversation (chat.ValidID); it is the
	// provenance origin's name.
	Conversation string `json:"conversation"`
	// MaxTurns is Claude Code's --max-turns (0: ChatMaxTurns); Timeout
	// stops the turn (0: ChatTimeout).
	MaxTurns int           `json:"max_turns"`
	Timeout  time.Duration `json:"-"`
	// Untrusted, when set, says why the turn is untrusted input from the
	// start (its conversation holds a tainted turn; its message carries
	// someone else's text): its session is tainted from its start.
	Untrusted string `json:"untrusted,omitempty"`
}

// A chat turn's limits unless its spec sets others: enough for a reply
// that looks something up or writes a memory, short enough that the owner
// waiting on a phone hears back.
const (
	ChatMaxTurns = 25
	ChatTimeout  = 10 * time.Minute
)

func (c *ChatSpec) maxTurns() int {
	if c.MaxTurns > 0 {
		return c.MaxTurns
	}
	return ChatMaxTurns
}

func (c *ChatSpec) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return ChatTimeout
}
