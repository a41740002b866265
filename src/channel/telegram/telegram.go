// Package telegram is the Telegram channel of hobbs serve: a bot, reached by
// long polling the Bot API (no listening port), that talks to the paired
// owner only.
//
// Pairing: Pair makes a one-time code (valid ten minutes, stored hashed);
// the owner sends `/start CODE` to the bot in a private chat and that chat
// becomes an owner. Nothing said in a chat changes the owners otherwise.
// Anyone else gets no answer and reaches nothing: each of their updates is
// audited (chat id, never text), at most strangerAudits lines per stranger
// per minute.
//
// The owner's /status, /runs, /stop NAME and /help are answered without the
// model (Host.Status, Runs, Stop, or a fixed text); any other text is a
// turn of the owner's conversation (Host.Chat), whose reply is sent back in
// parts within Telegram's 4096-character limit. A notice's buttons become
// an inline keyboard whose callback_data is an opaque random id, mapped
// host-side to the action, the chat and the message; only an owner's press
// of it counts, once for the notice, before it expires; then Host.Act, the
// press is answered and the message edited to show the result.
//
// Reliability: Deliver puts a notice in a durable outbox and returns; Run's
// sender delivers the outbox in order, retrying 429 (after retry_after),
// 5xx and network errors with backoff, never dropping one, and sends a
// notice id once across restarts. Polling resumes from the offset after the
// last handled update, stored with the rest of the state; pending buttons
// survive a restart. The token never appears in a log line, an error or
// the audit log.
package telegram

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/go-telegram/bot/models"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/channel"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// DefaultAPIURL is Telegram's Bot API server.
const DefaultAPIURL = "https://api.telegram.org"

// MaxText is the longest text of one Telegram message (in UTF-16 code
// units, the unit Telegram counts in; within it, a text is within the limit
// however it is counted).
const MaxText = 4096

// ButtonTTL is how long a notice's buttons can be pressed.
const ButtonTTL = 24 * time.Hour

// strangerAudits is how many audit lines one stranger's chat gets per minute.
const strangerAudits = 3

// maxStrangers bounds the strangers tracked for rate limiting at once.
const maxStrangers = 4096

// Options configure a channel. The caller decrypts the token and names a
// host-only state directory (no session may mount it).
type Options struct {
	APIURL string // "" is DefaultAPIURL; a self-hosted Bot API server's URL otherwise
	Token  string // the bot token's value
	// FS is the safe-open layer the state is opened beneath; Dir the state's
	// directory in it (created 0700).
	FS    safefile.Root
	Dir   string
	Audit *audit.Logger
	// Now is the clock (time.Now if nil).
	Now func() time.Time
	// After waits before a retry (time.After if nil): tests make it
	// immediate and record the delays.
	After func(time.Duration) <-chan time.Time
	// HTTPClient is used for every API call (a plain client if nil).
	HTTPClient *http.Client
	// PollTimeout is the long-poll timeout (50s if zero).
	PollTimeout time.Duration
	// Logf receives operational messages (already free of the token); nil
	// discards them.
	Logf func(format string, args ...any)
}

func (o Options) withDefaults() Options {
	if o.APIURL == "" {
		o.APIURL = DefaultAPIURL
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.After == nil {
		o.After = time.After
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	if o.PollTimeout == 0 {
		o.PollTimeout = 50 * time.Second
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return o
}

// Channel is the Telegram channel. It implements channel.Channel.
type Channel struct {
	o   Options
	st  store
	api *api

	wakeSend chan struct{} // the outbox or the owners changed
	wakeChat chan struct{} // the inbox changed

	// sentHook, when set (tests), is told of each outbox entry done.
	sentHook func(id string)

	mu        sync.Mutex
	strangers map[int64]*strangerCount
	badFiles  map[string]error // outbox and inbox files that cannot be read, reported once
}

type strangerCount struct {
	since time.Time
	n     int
}

var _ channel.Channel = (*Channel)(nil)

// New returns the channel for o, with its state directory created. It does
// not reach Telegram: Run does.
func New(o Options) (*Channel, error) {
	o = o.withDefaults()
	if strings.TrimSpace(o.Token) == "" {
		return nil, errors.New("telegram: no bot token")
	}
	if o.Dir == "" || o.FS.Dir() == "" {
		return nil, errors.New("telegram: no state directory")
	}
	a, err := newAPI(o.APIURL, o.Token, o.HTTPClient, o.Logf)
	if err != nil {
		return nil, err
	}
	c := &Channel{o: o, st: store{fs: o.FS, dir: o.Dir}, api: a,
		wakeSend: make(chan struct{}, 1), wakeChat: make(chan struct{}, 1),
		strangers: map[int64]*strangerCount{}, badFiles: map[string]error{}}
	if err := c.st.init(); err != nil {
		return nil, err
	}
	return c, nil
}

// Name is the channel's config name.
func (c *Channel) Name() string { return "telegram" }

func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (c *Channel) logf(format string, args ...any) {
	c.o.Logf("%s", c.api.redact(fmt.Sprintf(format, args...)))
}

// Deliver queues n for every owner in the durable outbox and returns. A
// notice id already accepted (queued or sent, within 30 days) is not queued
// again. Ids starting "reply:", "chat:" and "edit:" are the channel's own
// (its answers to the owner).
func (c *Channel) Deliver(n channel.Notice) error {
	if n.ID == "" {
		return errors.New("telegram: a notice needs an id")
	}
	return c.enqueue(&entry{ID: n.ID, Text: n.Text, Buttons: n.Buttons, Expires: n.Expires})
}

// MaxTotalText bounds the text of one notice or reply: 64 messages. A
// longer one is cut, saying so, so an outbox entry stays within
// instance.MaxChannelFile and the owner's phone is not flooded.
const MaxTotalText = 64 * MaxText

func capText(text string) string {
	n := utf16Len(text)
	if n <= MaxTotalText {
		return text
	}
	note := fmt.Sprintf("\n\n[cut: the whole text was %d characters]", n)
	return truncate(text, MaxTotalText-utf16Len(note)) + note
}

func (c *Channel) enqueue(e *entry) error {
	e.Text = capText(e.Text)
	added, err := c.st.enqueue(e, c.o.Now())
	if err != nil {
		return errors.New(c.api.redact(err.Error()))
	}
	if added {
		poke(c.wakeSend)
	}
	return nil
}

// Run checks the token (getMe), then polls for updates, sends the outbox and
// runs the owner's chat turns until ctx ends. It returns an error only when
// Telegram refuses the token.
func (c *Channel) Run(ctx context.Context, h channel.Host) error {
	if err := c.checkToken(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errc := make(chan error, 1)
	wg.Add(3)
	go func() {
		defer wg.Done()
		if err := c.poll(ctx, h); err != nil {
			errc <- err
			cancel()
		}
	}()
	go func() { defer wg.Done(); c.send(ctx) }()
	go func() { defer wg.Done(); c.chat(ctx, h) }()
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
		return nil
	}
}

// checkToken calls getMe until Telegram answers it: a token Telegram
// rejects is an error, any other failure is retried.
func (c *Channel) checkToken(ctx context.Context) error {
	var b backoff
	for {
		_, err := c.api.getMe(ctx)
		if err == nil {
			return nil
		}
		if fatal(err) {
			return err
		}
		c.logf("telegram: %v", err)
		if !c.wait(ctx, b.next(err)) {
			return ctx.Err()
		}
	}
}

// refused reports Telegram's refusal of a message for good: 403 (the
// owner blocked the bot or left the chat) or 400 (the chat is gone, or the
// message is one Telegram will not take), which no retry mends.
func refused(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && (ae.Code == http.StatusForbidden || ae.Code == http.StatusBadRequest)
}

// refuse records that chat key refused entry e for good: the rest of the
// outbox goes on; the entry is kept in undelivered/ once every chat has
// had it, and the refusal is logged and audited.
func (c *Channel) refuse(e *entry, key string, err error) {
	if e.Refused == nil {
		e.Refused = map[string]string{}
	}
	e.Refused[key] = err.Error()
	c.logf("telegram: chat %s refused notice %s for good (%v): it is kept in %s", key, e.ID, err, c.st.path(undeliveredDir, e.name))
	c.o.Audit.Record(audit.Entry{Event: "telegram.refused", Subject: e.ID, Detail: map[string]any{"chat": key}}, err)
	if werr := c.st.writeEntry(e); werr != nil {
		c.logf("telegram: %v", werr)
	}
}

// fatal reports an error no retry can mend: the token was refused.
func fatal(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && (ae.Code == http.StatusUnauthorized || ae.Code == http.StatusNotFound)
}

// backoff is the delay before a retry: retry_after for a 429, else
// doubling from one second to five minutes.
type backoff struct{ d time.Duration }

func (b *backoff) next(err error) time.Duration {
	var ae *apiError
	if errors.As(err, &ae) && ae.Code == http.StatusTooManyRequests && ae.RetryAfter > 0 {
		return ae.RetryAfter
	}
	if b.d == 0 {
		b.d = time.Second
	} else {
		b.d = min(2*b.d, 5*time.Minute)
	}
	return b.d
}

func (b *backoff) reset() { b.d = 0 }

// wait waits d (through Options.After) or until ctx ends; it reports
// whether ctx is still alive.
func (c *Channel) wait(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-c.o.After(d):
		return true
	}
}

// poll long-polls getUpdates. Each update is handled, then the offset after
// it is stored; only then is it confirmed to Telegram (by the next call),
// so a crash at any point handles it again rather than losing it.
func (c *Channel) poll(ctx context.Context, h channel.Host) error {
	var b backoff
	for ctx.Err() == nil {
		s, err := c.st.load()
		if err != nil {
			c.logf("telegram: %v", err)
			if !c.wait(ctx, b.next(err)) {
				return nil
			}
			continue
		}
		ups, err := c.api.getUpdates(ctx, s.offset(c.o.Now()), c.o.PollTimeout)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if fatal(err) {
				return err
			}
			c.logf("telegram: %v", err)
			if !c.wait(ctx, b.next(err)) {
				return nil
			}
			continue
		}
		b.reset()
		for _, u := range ups {
			err := c.handle(ctx, h, u)
			if err == nil {
				err = c.ack(u.ID)
			}
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				// Not acknowledged: the update comes again with the next poll.
				c.logf("telegram: update %d: %v", u.ID, err)
				if !c.wait(ctx, b.next(err)) {
					return nil
				}
				break
			}
		}
	}
	return nil
}

// offsetTTL: after a week without updates Telegram picks the next update id
// at random, possibly below a stored offset; an offset older than this is
// not used (polling without one returns the updates not yet confirmed,
// which is the same set).
const offsetTTL = 6 * 24 * time.Hour

// offset is where polling resumes.
func (s *state) offset(now time.Time) int64 {
	if now.Sub(s.OffsetAt) > offsetTTL {
		return 0
	}
	return s.Offset
}

// ack stores the offset after update id: it is handled.
func (c *Channel) ack(id int64) error {
	now := c.o.Now()
	return c.st.update(func(s *state) error {
		s.Offset, s.OffsetAt = id+1, now
		return nil
	})
}

// handle acts on one update. An error means it should be handled again.
func (c *Channel) handle(ctx context.Context, h channel.Host, u models.Update) error {
	switch {
	case u.Message != nil:
		return c.message(ctx, h, u.ID, u.Message)
	case u.CallbackQuery != nil:
		return c.callback(ctx, h, u.ID, u.CallbackQuery)
	}
	return nil // an update the channel did not ask for
}

// stranger audits an update from a chat that is not an owner's, at most
// strangerAudits lines per chat per minute. It never records text.
func (c *Channel) stranger(chat int64, kind, why string) {
	now := c.o.Now()
	c.mu.Lock()
	sc := c.strangers[chat]
	if sc == nil || now.Sub(sc.since) >= time.Minute {
		if sc == nil && len(c.strangers) >= maxStrangers {
			for k, v := range c.strangers {
				if now.Sub(v.since) >= time.Minute {
					delete(c.strangers, k)
				}
			}
		}
		if sc == nil && len(c.strangers) >= maxStrangers {
			c.mu.Unlock()
			return // a flood from more chats than we track: no line rather than no bound
		}
		sc = &strangerCount{since: now}
		c.strangers[chat] = sc
	}
	sc.n++
	n := sc.n
	c.mu.Unlock()
	if n > strangerAudits {
		return
	}
	d := map[string]any{"update": kind}
	if why != "" {
		d["reason"] = why
	}
	if n == strangerAudits {
		d["note"] = "further updates from this chat in this minute are not audited"
	}
	c.o.Audit.Record(audit.Entry{Event: "telegram.stranger", Subject: "chat:" + strconv.FormatInt(chat, 10), Outcome: "ignored", Detail: d}, nil)
}

// chatNew is the message that starts the conversation afresh
// (chat.NewCommand); chatTrust the one that trusts it again
// (chat.TrustCommand).
const (
	chatNew   = "/new"
	chatTrust = "/trust"
)

// helpText answers /help (and /start from an owner).
const helpText = `Hobbs answers these without the model:
/status – sessions, queued and running runs, next schedules
/runs – the latest runs and their outcomes
/stop NAME – stop a session or a run
/new – start a new conversation (the earlier turns are kept on the host)
/trust – trust this conversation again after a turn read untrusted input (a web page, a forwarded message)
/help – this text
Anything else you write is a turn of your conversation with Hobbs.`

// command splits "/cmd@bot args" into "cmd" and "args"; ok is false for
// text that is not a command.
func command(text string) (cmd, args string, ok bool) {
	if !strings.HasPrefix(text, "/") {
		return "", "", false
	}
	text = strings.TrimSpace(text[1:])
	first, rest := text, ""
	if i := strings.IndexFunc(text, unicode.IsSpace); i >= 0 {
		first, rest = text[:i], text[i:]
	}
	first, _, _ = strings.Cut(first, "@")
	return strings.ToLower(first), strings.TrimSpace(rest), true
}

func (c *Channel) message(ctx context.Context, h channel.Host, upd int64, m *models.Message) error {
	chat := m.Chat.ID
	s, err := c.st.load()
	if err != nil {
		return err
	}
	cmd, args, isCmd := command(m.Text)
	if m.ForwardOrigin != nil || m.IsAutomaticForward {
		isCmd = false // a forwarded "/trust" is someone else's text, never the owner's command
	}
	if !s.isOwner(chat) {
		if isCmd && cmd == "start" && args != "" && m.Chat.Type == models.ChatTypePrivate && m.From != nil && m.From.ID == chat {
			return c.pair(chat, upd, args)
		}
		why := ""
		if isCmd && cmd == "start" {
			why = "pairing refused"
		}
		c.stranger(chat, "message", why)
		return nil
	}
	replyID := "reply:" + strconv.FormatInt(upd, 10)
	reply := func(text string) error { return c.enqueue(&entry{ID: replyID, Chat: chat, Text: text}) }
	if m.Text == "" {
		return reply("Hobbs reads text messages only.")
	}
	if !isCmd {
		return c.queueChat(upd, chat, ownerMessage(m, chat))
	}
	var text string
	switch cmd {
	case "start", "help":
		return reply(helpText)
	case "status":
		text, err = h.Status(ctx)
	case "runs":
		text, err = h.Runs(ctx)
	case "stop":
		if args == "" {
			return reply("Usage: /stop NAME")
		}
		text, err = h.Stop(ctx, args)
	case "new": // in turn with the messages before it
		return c.queueChat(upd, chat, channel.Message{Text: chatNew})
	case "trust":
		return c.queueChat(upd, chat, channel.Message{Text: chatTrust})
	default:
		return c.queueChat(upd, chat, ownerMessage(m, chat))
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		text = "/" + cmd + " failed: " + audit.Redact(err.Error())
	}
	return reply(text)
}

func (c *Channel) queueChat(upd, chat int64, m channel.Message) error {
	if err := c.st.addInbox(inboxItem{Update: upd, Chat: chat, Text: m.Text, Quoted: m.Quoted}); err != nil {
		return err
	}
	poke(c.wakeChat)
	return nil
}

// pair redeems a /start code from a private chat that is not an owner yet.
// A wrong, expired or used code is a stranger's message: no answer.
func (c *Channel) pair(chat, upd int64, code string) error {
	now := c.o.Now()
	paired := false
	err := c.st.update(func(s *state) error {
		paired = s.redeem(code, chat, now)
		if !paired {
			return errNoChange
		}
		return nil
	})
	if errors.Is(err, errNoChange) {
		c.stranger(chat, "message", "pairing refused")
		return nil
	}
	if err != nil {
		return err
	}
	c.o.Audit.Record(audit.Entry{Event: "telegram.pair", Subject: "chat:" + strconv.FormatInt(chat, 10)}, nil)
	poke(c.wakeSend) // notices waiting for an owner can go
	return c.enqueue(&entry{ID: "reply:" + strconv.FormatInt(upd, 10), Chat: chat,
		Text: "Paired: this chat now reaches Hobbs.\n\n" + helpText})
}

var errNoChange = errors.New("no change")

// callback handles a button press.
func (c *Channel) callback(ctx context.Context, h channel.Host, upd int64, q *models.CallbackQuery) error {
	var chat int64
	var msgID int
	if m := q.Message.Message; m != nil {
		chat, msgID = m.Chat.ID, m.ID
	} else if im := q.Message.InaccessibleMessage; im != nil {
		chat, msgID = im.Chat.ID, im.MessageID
	}
	s, err := c.st.load()
	if err != nil {
		return err
	}
	// Only an owner's own press in the owner's private chat counts.
	if !s.isOwner(chat) || q.From.ID != chat {
		who := chat
		if !s.isOwner(q.From.ID) {
			who = q.From.ID
		}
		c.stranger(who, "callback_query", "")
		return nil
	}
	now := c.o.Now()
	var b button
	verdict := ""
	err = c.st.update(func(s *state) error {
		var found bool
		b, found = s.Buttons[q.Data]
		switch {
		case !found || b.Chat != chat || (b.Message != 0 && b.Message != msgID):
			verdict = "This button is not valid."
		case s.Answered[b.Notice] != time.Time{}:
			verdict = "Already answered."
		case !now.Before(b.Expires):
			verdict = "This button has expired."
		default:
			if s.Answered == nil {
				s.Answered = map[string]time.Time{}
			}
			s.Answered[b.Notice] = now // single use: before Act, so a crash never acts twice
			return nil
		}
		return errNoChange
	})
	if err != nil && !errors.Is(err, errNoChange) {
		return err
	}
	if verdict != "" {
		c.o.Audit.Record(audit.Entry{Event: "telegram.button", Subject: "chat:" + strconv.FormatInt(chat, 10), Outcome: "refused",
			Detail: map[string]any{"reason": verdict}}, nil)
		c.answer(ctx, q.ID, verdict)
		return nil
	}
	b.Action.By = "telegram:" + strconv.FormatInt(chat, 10)
	result, actErr := h.Act(ctx, b.Action)
	if actErr != nil {
		result = "failed: " + audit.Redact(actErr.Error())
	}
	c.o.Audit.Record(audit.Entry{Event: "telegram.button", Subject: b.Notice,
		Detail: map[string]any{"kind": b.Action.Kind, "chat": chat}}, actErr)
	c.answer(ctx, q.ID, truncate(result, 200))
	text := truncate(b.Text+"\n\n"+b.Action.Label+": "+result, MaxText)
	return c.enqueue(&entry{ID: "edit:" + strconv.FormatInt(upd, 10), Chat: chat, Edit: msgID, Text: text})
}

// answer answers a callback query: best effort, as Telegram forgets a
// query after a short while and the edit that follows shows the result.
func (c *Channel) answer(ctx context.Context, id, text string) {
	if err := c.api.answerCallbackQuery(ctx, id, text); err != nil && ctx.Err() == nil {
		c.logf("telegram: %v", err)
	}
}

// chat runs the owner's chat turns from the inbox, one at a time, in order.
// A turn interrupted by a restart runs again; its reply is sent once.
func (c *Channel) chat(ctx context.Context, h channel.Host) {
	var b backoff
	for ctx.Err() == nil {
		c.mu.Lock()
		it, err := c.st.nextInbox(c.badFiles)
		c.mu.Unlock()
		if err != nil {
			c.logf("telegram: %v", err)
			if !c.wait(ctx, b.next(err)) {
				return
			}
			continue
		}
		if it == nil {
			select {
			case <-ctx.Done():
				return
			case <-c.wakeChat:
			}
			continue
		}
		reply, err := h.Chat(ctx, strconv.FormatInt(it.Chat, 10), channel.Message{Text: it.Text, Quoted: it.Quoted})
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			reply = "Hobbs could not answer: " + audit.Redact(err.Error())
		}
		if err := c.enqueue(&entry{ID: "chat:" + strconv.FormatInt(it.Update, 10), Chat: it.Chat, Text: reply}); err != nil {
			c.logf("telegram: %v", err)
			if !c.wait(ctx, b.next(err)) {
				return
			}
			continue
		}
		if err := c.st.removeInbox(it); err != nil {
			c.logf("telegram: %v", err)
		}
		b.reset()
	}
}

// send delivers the outbox in order, retrying each entry until Telegram
// accepts it.
func (c *Channel) send(ctx context.Context) {
	var b backoff
	for ctx.Err() == nil {
		e, err := c.nextEntry()
		if err == nil && e != nil {
			err = c.sendEntry(ctx, e)
			if errors.Is(err, errNoOwner) {
				e = nil
				err = nil
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			c.logf("telegram: %v", err)
			if !c.wait(ctx, b.next(err)) {
				return
			}
			continue
		}
		b.reset()
		if e == nil {
			select {
			case <-ctx.Done():
				return
			case <-c.wakeSend:
			}
		}
	}
}

var errNoOwner = errors.New("no owner paired yet")

// nextEntry returns the first outbox entry that can be read; one that
// cannot is reported once and passed over (left as it is).
func (c *Channel) nextEntry() (*entry, error) {
	names, err := c.st.outboxNames()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range names {
		if c.badFiles[n] != nil {
			continue
		}
		e, err := c.st.readEntry(n)
		if err != nil {
			c.badFiles[n] = err
			c.logf("telegram: outbox entry passed over: %v", err)
			c.o.Audit.Record(audit.Entry{Event: "telegram.outbox", Subject: n}, err)
			continue
		}
		return e, nil
	}
	return nil, nil
}

// sendEntry sends one entry to each of its chats, recording progress after
// every part, and removes it when all have it.
func (c *Channel) sendEntry(ctx context.Context, e *entry) error {
	if len(e.To) == 0 {
		if e.Chat != 0 {
			e.To = []int64{e.Chat}
		} else {
			s, err := c.st.load()
			if err != nil {
				return err
			}
			if len(s.Owners) == 0 {
				return errNoOwner // it waits in the outbox for the pairing
			}
			e.To = append([]int64(nil), s.Owners...)
		}
		if len(e.Buttons) > 0 {
			e.Tokens = map[string][]string{}
			for _, chat := range e.To {
				var toks []string
				for range e.Buttons {
					toks = append(toks, newToken())
				}
				e.Tokens[strconv.FormatInt(chat, 10)] = toks
			}
			// The buttons are bound before the message is sent, so a
			// press that comes before the send returns finds them.
			if err := c.bind(e); err != nil {
				return err
			}
		}
		if err := c.st.writeEntry(e); err != nil {
			return err
		}
	}
	if e.Done == nil {
		e.Done = map[string]int{}
	}
	s, err := c.st.load()
	if err != nil {
		return err
	}
	for _, chat := range e.To {
		key := strconv.FormatInt(chat, 10)
		if !s.isOwner(chat) {
			continue // unpaired since it was queued: nothing goes to it any more
		}
		if e.Refused[key] != "" {
			continue // refused for good at an earlier attempt
		}
		if e.Edit != 0 {
			if e.Done[key] > 0 {
				continue
			}
			err := c.api.editMessageText(ctx, chat, e.Edit, e.Text)
			var ae *apiError
			if errors.As(err, &ae) && ae.Code == http.StatusBadRequest && strings.Contains(ae.Msg, "message is not modified") {
				err = nil // the edit was made before a restart
			}
			if errors.As(err, &ae) && ae.Code == http.StatusBadRequest {
				// The message is gone or cannot be edited: the
				// new text goes as a message of its own.
				e.Edit = 0
				if err := c.st.writeEntry(e); err != nil {
					return err
				}
				return c.sendEntry(ctx, e)
			}
			if refused(err) {
				c.refuse(e, key, err)
				continue
			}
			if err != nil {
				return err
			}
			e.Done[key] = 1
			if err := c.st.writeEntry(e); err != nil {
				return err
			}
			continue
		}
		parts := split(e.Text, MaxText)
		for i := e.Done[key]; i < len(parts); i++ {
			var rows [][]models.InlineKeyboardButton
			last := i == len(parts)-1
			if last && len(e.Buttons) > 0 {
				rows = keyboard(e.Buttons, e.Tokens[key])
			}
			msgID, err := c.api.sendMessage(ctx, chat, parts[i], rows)
			if refused(err) {
				c.refuse(e, key, err)
				break
			}
			if err != nil {
				return err
			}
			if last && len(e.Buttons) > 0 {
				if err := c.bound(e, chat, msgID); err != nil {
					return err
				}
			}
			e.Done[key] = i + 1
			if err := c.st.writeEntry(e); err != nil {
				return err
			}
		}
	}
	if len(e.Refused) > 0 {
		if err := c.st.setAside(e); err != nil {
			return err
		}
	}
	if err := c.st.removeEntry(e); err != nil {
		return err
	}
	if e.Chat == 0 {
		c.o.Audit.Record(audit.Entry{Event: "telegram.deliver", Subject: e.ID, Detail: map[string]any{"chats": len(e.To)}}, nil)
	}
	if c.sentHook != nil {
		c.sentHook(e.ID)
	}
	return nil
}

// bind records the buttons of an entry about to be sent, for each of its
// chats: callback_data → action, notice, chat, the text they are sent
// under, expiry. The message id is added by bound once it is known.
func (c *Channel) bind(e *entry) error {
	now := c.o.Now()
	parts := split(e.Text, MaxText)
	text := parts[len(parts)-1]
	expires := now.Add(ButtonTTL)
	if !e.Expires.IsZero() && e.Expires.Before(expires) {
		expires = e.Expires
	}
	return c.st.update(func(s *state) error {
		if s.Buttons == nil {
			s.Buttons = map[string]button{}
		}
		for _, chat := range e.To {
			for i, a := range e.Buttons {
				s.Buttons[e.Tokens[strconv.FormatInt(chat, 10)][i]] = button{Notice: e.ID, Action: a, Chat: chat, Text: text, Expires: expires}
			}
		}
		s.prune(now)
		return nil
	})
}

// bound records the message a chat's buttons were sent with.
func (c *Channel) bound(e *entry, chat int64, msgID int) error {
	return c.st.update(func(s *state) error {
		for _, tok := range e.Tokens[strconv.FormatInt(chat, 10)] {
			if b, ok := s.Buttons[tok]; ok {
				b.Message = msgID
				s.Buttons[tok] = b
			}
		}
		return nil
	})
}

// keyboard lays the buttons out one per row.
func keyboard(actions []channel.Action, toks []string) [][]models.InlineKeyboardButton {
	var rows [][]models.InlineKeyboardButton
	for i, a := range actions {
		label := a.Label
		if label == "" {
			label = a.Kind
		}
		rows = append(rows, []models.InlineKeyboardButton{{Text: label, CallbackData: toks[i]}})
	}
	return rows
}

// newToken is a button's callback_data: 18 random bytes, 24 characters of
// base64url (Telegram allows 64 bytes). It says nothing about the action.
func newToken() string {
	var b [18]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported systems
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// truncate cuts s to at most max UTF-16 units, marking the cut.
func truncate(s string, max int) string {
	if utf16Len(s) <= max {
		return s
	}
	parts := split(s, max-1)
	return parts[0] + "…"
}

// split cuts text into parts of at most max UTF-16 code units, at the last
// newline (or else space) in the second half of a part where there is
// one, never inside a character. An empty text is one part saying so.
func split(text string, max int) []string {
	if strings.TrimSpace(text) == "" {
		return []string{"(empty)"}
	}
	var parts []string
	for utf16Len(text) > max {
		// cut: the byte index where max units end.
		cut, n := 0, 0
		for i, r := range text {
			if n+utf16.RuneLen(r) > max {
				break
			}
			n += utf16.RuneLen(r)
			cut = i + utf8.RuneLen(r)
		}
		at := cut
		if i := strings.LastIndexByte(text[:cut], '\n'); i > cut/2 {
			at = i + 1
		} else if i := strings.LastIndexByte(text[:cut], ' '); i > cut/2 {
			at = i + 1
		}
		part := strings.TrimRight(text[:at], "\n")
		if strings.TrimSpace(part) != "" {
			parts = append(parts, part)
		}
		text = text[at:]
	}
	if strings.TrimSpace(text) != "" {
		parts = append(parts, strings.TrimRight(text, "\n"))
	}
	return parts
}
