package launcher

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/playbook"
)

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

// ChatPrompt is a chat turn's prompt: fixed text, the conversation comes
// on standard input.
const ChatPrompt = "Chat turn: your owner is writing to you from their phone. The piped input is the conversation as JSON: " +
	"\"turns\" are the earlier exchanges as the host recorded them, oldest first, each the owner's text (\"owner\") and your reply (\"hobbs\"); " +
	"\"message\" is the owner's new message. Answer it. Your final response is sent to the owner as a chat message, as it is: " +
	"plain text, short. No one can approve a tool use during the turn: what is not already allowed is denied."

// ChatInput says what a chat turn's Claude Code reads on its standard input.
const ChatInput = "the conversation as JSON: the turns the host recorded (owner's text, reply) and the owner's new message"

// ChatCommand is a chat turn's Claude Code command line: print mode with
// the fixed prompt, no one to ask (dontAsk: only allow rules approve, here
// the managed settings'), the JSON result, no session saved (the host
// keeps the conversation), no settings from the workspace, no MCP server
// and every MCP tool denied, and the turn limit.
func ChatCommand(maxTurns int) []string {
	return []string{"claude", "-p", ChatPrompt, "--permission-mode", playbook.PermissionMode,
		"--output-format", playbook.OutputFormat, "--no-session-persistence", "--setting-sources", playbook.SettingSources,
		"--strict-mcp-config", "--max-turns", strconv.Itoa(maxTurns), "--disallowedTools", "mcp__*"}
}

// maxChatOutput bounds what the launcher keeps of a chat turn's standard
// output (its end: the JSON result comes last).
const maxChatOutput = 1 << 20

// ChatResult is what a chat turn came to.
type ChatResult struct {
	Reply  string        // the result's text, every secret value masked
	Result *ClaudeResult // Claude Code's JSON result, when there was one
	Code   int           // the agent command's exit code
}

// RunChat carries out chat turn plan p (never as root: RefuseRoot) with
// input (the conversation) on Claude Code's standard input, and returns
// its reply: the text of Claude Code's JSON result. A turn without a
// successful result is an error that says why (the time limit, the turn
// limit, no result). The reply and the error hold no secret value of the
// run: every value the run got (env: variables, bound secrets) is
// replaced by "[secret NAME]" in the forms the proxy's masks know
// (egress.NameMask), since the agent holds the env: values and its output
// is its own to write.
func RunChat(ctx context.Context, p *Plan, rt Runtime, input []byte) (ChatResult, error) {
	if p.Kind != KindChat {
		return ChatResult{}, errs.Failf("internal: RunChat of a %s plan", p.Kind)
	}
	if err := RefuseRoot(); err != nil {
		return ChatResult{}, err
	}
	out := &tailBuffer{max: maxChatOutput}
	rt.Stdin, rt.Stdout, rt.Detached = bytes.NewReader(input), out, false
	code, mask, runErr := execute(ctx, p, rt, true)
	return chatReply(p, code, runErr, []byte(out.String()), mask)
}

// chatReply decides what a chat turn came to from its exit code, the
// launcher's error and its standard output, with mask applied to every
// text that leaves.
func chatReply(p *Plan, code int, runErr error, stdout []byte, mask func(string) string) (ChatResult, error) {
	if mask == nil {
		mask = func(s string) string { return s }
	}
	res := ChatResult{Code: code}
	r, ok := ParseResult(stdout)
	if ok {
		res.Result = &r
	}
	fail := func(format string, args ...any) (ChatResult, error) {
		return res, &errs.Error{Code: errs.Failure, Msg: mask(fmt.Sprintf(format, args...))}
	}
	switch {
	case runErr != nil && code == errs.Timeout:
		return fail("the turn stopped at its time limit (%s) before Hobbs replied", p.TimeoutText)
	case runErr != nil && errs.Code(runErr) == ExitStopped:
		return fail("the turn was stopped before Hobbs replied")
	case runErr != nil:
		var e *errs.Error
		if errors.As(runErr, &e) && e.Hint != "" {
			return fail("the turn could not run: %s (%s)", firstLine(runErr.Error()), e.Hint)
		}
		return fail("the turn could not run: %s", firstLine(runErr.Error()))
	case !ok:
		return fail("Hobbs gave no reply: no result from Claude Code (exit %d)", code)
	case r.Subtype == SubtypeMaxTurns:
		return fail("Hobbs gave no reply: the turn reached its limit of %d turns", p.Claude.MaxTurns)
	case r.Subtype != SubtypeSuccess || r.IsError:
		why := r.Subtype
		if len(r.Errors) > 0 {
			why += ": " + firstLine(strings.Join(r.Errors, "; "))
		} else if t := strings.TrimSpace(r.Result); t != "" {
			why += ": " + firstLine(t)
		}
		return fail("Hobbs gave no reply: Claude Code's result is %s", why)
	case strings.TrimSpace(r.Result) == "":
		return fail("Hobbs gave an empty reply")
	}
	res.Reply = mask(r.Result)
	return res, nil
}
