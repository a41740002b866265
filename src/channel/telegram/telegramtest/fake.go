// Package telegramtest is a FAKE Telegram Bot API server for tests: the real
// one (api.telegram.org, or a self-hosted Bot API server) cannot be reached
// from a test. It follows the Bot API documentation
// (https://core.telegram.org/bots/api) for what the Telegram channel uses:
//
//   - requests are https://HOST/bot<token>/<method>, with parameters in the
//     query string, an application/x-www-form-urlencoded or
//     multipart/form-data body (objects such as reply_markup and
//     allowed_updates JSON-serialized in a field) or an application/json body;
//   - every answer is a JSON object with "ok"; on failure "error_code",
//     "description" and, for 429 Too Many Requests, "parameters.retry_after";
//   - getMe; getUpdates with offset (an update is confirmed, and forgotten, as
//     soon as getUpdates is called with an offset higher than its update_id),
//     limit (1-100, default 100), timeout (long polling: the request is held
//     until an update arrives or timeout seconds pass), allowed_updates (kept
//     until the next call that names it) and 409 Conflict for a poll
//     terminated by another getUpdates request;
//   - sendMessage (text 1-4096 characters, counted here in UTF-16 code units,
//     the unit of Telegram's entity offsets: a text within it is within
//     Telegram's limit however Telegram counts; reply_markup inline_keyboard
//     with callback_data of 1-64 bytes), editMessageText (400 "message is not
//     modified" when nothing changes) and answerCallbackQuery (text up to 200
//     characters; a query is answered once).
//   - a message the owner forwards carries forward_origin (a MessageOrigin:
//     "type" user with sender_user, hidden_user with sender_user_name, chat
//     with sender_chat, channel with chat and message_id; each with its
//     date); a reply carries reply_to_message (the message replied to, in
//     the same chat, without its own reply_to_message), external_reply
//     (an ExternalReplyInfo with the origin of a message in another chat)
//     and, when the owner quoted part of it, quote (a TextQuote: text and
//     position).
//
// Tests drive it as any chat: Send writes a message to the bot from a chat id,
// Press presses an inline button, Fail injects 429 with retry_after and 5xx
// answers, and Wait blocks on a condition over what the bot sent (a condition
// variable, not a sleep).
package telegramtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"
)

// Token is the bot token the fake accepts unless NewFake is given another.
const Token = "123456789:AAFakeTokenForTestsOnly_abcdefghijkl"

// BotID is the fake bot's user id.
const BotID = 123456789

// Button is one inline keyboard button as the bot sent it.
type Button struct {
	Text         string `json:"text"`
	CallbackData string `json:"callback_data,omitempty"`
}

// Sent is a message the bot sent, as it stands now (edits applied).
type Sent struct {
	ID       int
	Chat     int64
	Text     string
	Keyboard [][]Button
	Edits    int
}

// Answer is one answerCallbackQuery call.
type Answer struct {
	QueryID string
	Text    string
}

// Call is one request the fake received.
type Call struct {
	Method string
	Path   string // the request's path, which holds the token
	Params map[string]string
}

type failure struct {
	code       int
	retryAfter int
}

type update struct {
	ID      int64          `json:"update_id"`
	Message *message       `json:"message,omitempty"`
	Query   *callbackQuery `json:"callback_query,omitempty"`
	kind    string
}

type user struct {
	ID        int64  `json:"id"`
	IsBot     bool   `json:"is_bot"`
	FirstName string `json:"first_name"`
	Username  string `json:"username,omitempty"`
}

type chat struct {
	ID    int64  `json:"id"`
	Type  string `json:"type"`
	Title string `json:"title,omitempty"`
}

type message struct {
	ID             int             `json:"message_id"`
	From           *user           `json:"from,omitempty"`
	Date           int64           `json:"date"`
	Chat           chat            `json:"chat"`
	ForwardOrigin  *Origin         `json:"forward_origin,omitempty"`
	ReplyToMessage *message        `json:"reply_to_message,omitempty"`
	ExternalReply  *externalReply  `json:"external_reply,omitempty"`
	Quote          *textQuote      `json:"quote,omitempty"`
	Text           string          `json:"text,omitempty"`
	ReplyMarkup    *inlineKeyboard `json:"reply_markup,omitempty"`
}

// Origin is a MessageOrigin: where a forwarded message, or one replied to
// in another chat, came from. Type is "user" (SenderUser), "hidden_user"
// (SenderUserName), "chat" (SenderChat) or "channel" (Chat, MessageID).
type Origin struct {
	Type           string `json:"type"`
	Date           int64  `json:"date"`
	SenderUser     *user  `json:"sender_user,omitempty"`
	SenderUserName string `json:"sender_user_name,omitempty"`
	SenderChat     *chat  `json:"sender_chat,omitempty"`
	Chat           *chat  `json:"chat,omitempty"`
	MessageID      int    `json:"message_id,omitempty"`
}

// FromUser is the origin of a message user id (first name name) wrote.
func FromUser(id int64, name string) Origin {
	return Origin{Type: "user", Date: time.Now().Unix(), SenderUser: &user{ID: id, FirstName: name}}
}

// FromChannel is the origin of message msgID of channel id (title).
func FromChannel(id int64, title string, msgID int) Origin {
	return Origin{Type: "channel", Date: time.Now().Unix(), Chat: &chat{ID: id, Type: "channel", Title: title}, MessageID: msgID}
}

type externalReply struct {
	Origin    Origin `json:"origin"`
	Chat      *chat  `json:"chat,omitempty"`
	MessageID int    `json:"message_id,omitempty"`
}

type textQuote struct {
	Text     string `json:"text"`
	Position int    `json:"position"`
}

type inlineKeyboard struct {
	InlineKeyboard [][]Button `json:"inline_keyboard"`
}

type callbackQuery struct {
	ID           string   `json:"id"`
	From         user     `json:"from"`
	Message      *message `json:"message,omitempty"`
	ChatInstance string   `json:"chat_instance"`
	Data         string   `json:"data,omitempty"`
}

// Fake is a FAKE Telegram Bot API server on loopback.
type Fake struct {
	URL   string // the API URL to give the channel (no trailing slash)
	token string
	srv   *httptest.Server

	mu        sync.Mutex
	cond      *sync.Cond
	changed   chan struct{} // closed and replaced on every change, for long polls
	nextID    int64
	updates   []update
	confirmed int64 // the highest offset a getUpdates call gave
	allowed   []string
	pollGen   int
	nextMsg   int
	sent      []*Sent
	chats     map[int64]string // chat id → type, chats the bot may write to
	received  map[int]message  // messages sent to the bot, for replies to them
	msgOf     map[int64]int    // update id → the id of the message it carried
	answers   []Answer
	queries   map[string]bool // open callback queries: id → answered
	fails     map[string][]failure
	calls     []Call
	closed    bool
}

// NewFake starts a fake server for token ("" is Token) and stops it when
// the test ends.
func NewFake(t testing.TB, token string) *Fake {
	if token == "" {
		token = Token
	}
	f := &Fake{token: token, nextID: 1000, nextMsg: 1, chats: map[int64]string{},
		queries: map[string]bool{}, fails: map[string][]failure{}, changed: make(chan struct{})}
	f.cond = sync.NewCond(&f.mu)
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	f.URL = f.srv.URL
	t.Cleanup(f.Close)
	return f
}

// Close stops the server, ending any held long poll.
func (f *Fake) Close() {
	f.mu.Lock()
	if !f.closed {
		f.closed = true
		f.changeLocked()
	}
	f.mu.Unlock()
	f.srv.CloseClientConnections()
	f.srv.Close()
}

func (f *Fake) changeLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
	f.cond.Broadcast()
}

// Send makes chat (a private chat: the sender's user id is the chat id)
// write text to the bot, and returns the update's id.
func (f *Fake) Send(chatID int64, text string) int64 {
	return f.SendAs(chatID, "private", chatID, text)
}

// SendAs writes text to the bot from user from in a chat of chatType
// ("private", "group", "supergroup").
func (f *Fake) SendAs(chatID int64, chatType string, from int64, text string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.chats[chatID] = chatType
	f.nextMsg++
	m := &message{ID: f.nextMsg, From: &user{ID: from, FirstName: "user" + strconv.FormatInt(from, 10)},
		Date: time.Now().Unix(), Chat: chat{ID: chatID, Type: chatType}, Text: text}
	return f.addLocked(update{Message: m, kind: "message"})
}

// Forward makes chat (private) forward to the bot a message with text
// that origin wrote, and returns the update's id.
func (f *Fake) Forward(chatID int64, origin Origin, text string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.newMessageLocked(chatID, text)
	m.ForwardOrigin = &origin
	return f.addLocked(update{Message: m, kind: "message"})
}

// Reply makes chat (private) reply with text to message msgID of the chat
// (one the bot sent or one the chat sent it), quoting quote of it when
// quote is not "", and returns the update's id.
func (f *Fake) Reply(chatID int64, msgID int, quote, text string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.newMessageLocked(chatID, text)
	to := f.messageLocked(chatID, msgID)
	m.ReplyToMessage = &to
	if quote != "" {
		m.Quote = &textQuote{Text: quote, Position: strings.Index(to.Text, quote)}
	}
	return f.addLocked(update{Message: m, kind: "message"})
}

// ReplyExternal makes chat (private) reply with text to a message origin
// wrote in another chat, quoting quote of it, and returns the update's id.
func (f *Fake) ReplyExternal(chatID int64, origin Origin, quote, text string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.newMessageLocked(chatID, text)
	m.ExternalReply = &externalReply{Origin: origin, Chat: origin.Chat, MessageID: origin.MessageID}
	if quote != "" {
		m.Quote = &textQuote{Text: quote}
	}
	return f.addLocked(update{Message: m, kind: "message"})
}

// newMessageLocked is a new message of private chat chatID's, sent by the
// chat's user.
func (f *Fake) newMessageLocked(chatID int64, text string) *message {
	f.chats[chatID] = "private"
	f.nextMsg++
	m := &message{ID: f.nextMsg, From: &user{ID: chatID, FirstName: "user" + strconv.FormatInt(chatID, 10)},
		Date: time.Now().Unix(), Chat: chat{ID: chatID, Type: "private"}, Text: text}
	return m
}

// MessageOf is the id of the message update id carried (0: none).
func (f *Fake) MessageOf(id int64) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.msgOf[id]
}

// messageLocked is message msgID of chat chatID as a reply carries it: one
// the bot sent, as it stands, or one the chat sent it.
func (f *Fake) messageLocked(chatID int64, msgID int) message {
	for _, s := range f.sent {
		if s.Chat == chatID && s.ID == msgID {
			m := f.asMessage(s, f.chats[chatID])
			m.ReplyMarkup = nil
			return m
		}
	}
	if m, ok := f.received[msgID]; ok && m.Chat.ID == chatID {
		m.ReplyToMessage = nil // Telegram does not nest replies further
		return m
	}
	return message{ID: msgID, Date: time.Now().Unix(), Chat: chat{ID: chatID, Type: f.chats[chatID]}}
}

// Press makes user from press the button with data on message msgID of
// chat chatID, as Telegram reports it (the message as the bot last set it),
// and returns the callback query's id. from may differ from chatID, as in
// a group, and data need not be on the message (a forged press).
func (f *Fake) Press(chatID, from int64, msgID int, data string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var m *message
	for _, s := range f.sent {
		if s.Chat == chatID && s.ID == msgID {
			m = &message{ID: s.ID, From: &user{ID: BotID, IsBot: true, FirstName: "Hobbs"},
				Chat: chat{ID: chatID, Type: f.chats[chatID]}, Text: s.Text}
			if s.Keyboard != nil {
				m.ReplyMarkup = &inlineKeyboard{s.Keyboard}
			}
		}
	}
	if m == nil {
		m = &message{ID: msgID, Chat: chat{ID: chatID, Type: "private"}}
	}
	f.nextMsg++
	id := "cq" + strconv.Itoa(f.nextMsg)
	f.queries[id] = false
	f.addLocked(update{Query: &callbackQuery{ID: id, From: user{ID: from, FirstName: "user"},
		Message: m, ChatInstance: "ci" + strconv.FormatInt(chatID, 10), Data: data}, kind: "callback_query"})
	return id
}

func (f *Fake) addLocked(u update) int64 {
	f.nextID++
	u.ID = f.nextID
	if u.Message != nil {
		if f.msgOf == nil {
			f.msgOf = map[int64]int{}
		}
		f.msgOf[u.ID] = u.Message.ID
		if f.received == nil {
			f.received = map[int]message{}
		}
		f.received[u.Message.ID] = *u.Message
	}
	if len(f.allowed) > 0 && !contains(f.allowed, u.kind) {
		return u.ID // Telegram does not queue updates of types the bot did not ask for
	}
	f.updates = append(f.updates, u)
	f.changeLocked()
	return u.ID
}

// Fail makes the next n calls of method fail with code: 429 carries
// retry_after seconds in its parameters; 502 answers with a proxy's HTML page,
// as Telegram's front end does; any other code a JSON error.
func (f *Fake) Fail(method string, n, code, retryAfter int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for range n {
		f.fails[method] = append(f.fails[method], failure{code, retryAfter})
	}
}

// Sent returns copies of the messages the bot sent to chat, in order.
func (f *Fake) Sent(chatID int64) []Sent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sentLocked(chatID)
}

func (f *Fake) sentLocked(chatID int64) []Sent {
	var out []Sent
	for _, s := range f.sent {
		if s.Chat == chatID {
			out = append(out, *s)
		}
	}
	return out
}

// Answers returns the answerCallbackQuery calls so far.
func (f *Fake) Answers() []Answer {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Answer(nil), f.answers...)
}

// Calls returns the requests received so far.
func (f *Fake) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Call(nil), f.calls...)
}

// Confirmed is the highest offset a getUpdates call gave: every update below
// it is confirmed and forgotten.
func (f *Fake) Confirmed() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.confirmed
}

// Wait blocks until cond (called with the fake's state locked, through the
// View it is given) holds, or fails the test after timeout. It wakes on
// every change, never on a timer.
func (f *Fake) Wait(t testing.TB, timeout time.Duration, what string, cond func(v View) bool) {
	t.Helper()
	timer := time.AfterFunc(timeout, func() {
		f.mu.Lock()
		f.cond.Broadcast()
		f.mu.Unlock()
	})
	defer timer.Stop()
	deadline := time.Now().Add(timeout)
	f.mu.Lock()
	defer f.mu.Unlock()
	for !cond(View{f}) {
		if time.Now().After(deadline) {
			t.Fatalf("fake telegram: timed out waiting for %s", what)
		}
		f.cond.Wait()
	}
}

// View is the fake's state as Wait's condition sees it.
type View struct{ f *Fake }

// Sent is Fake.Sent under Wait's lock.
func (v View) Sent(chatID int64) []Sent { return v.f.sentLocked(chatID) }

// Answers is the number of answerCallbackQuery calls.
func (v View) Answers() int { return len(v.f.answers) }

// Confirmed is Fake.Confirmed under Wait's lock.
func (v View) Confirmed() int64 { return v.f.confirmed }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// apiError writes a Bot API error answer.
func apiError(w http.ResponseWriter, code int, desc string, retryAfter int) {
	w.Header().Set("Content-Type", "application/json")
	if retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	}
	w.WriteHeader(code)
	body := map[string]any{"ok": false, "error_code": code, "description": desc}
	if retryAfter > 0 {
		body["parameters"] = map[string]any{"retry_after": retryAfter}
	}
	_ = json.NewEncoder(w).Encode(body)
}

func ok(w http.ResponseWriter, result any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": result})
}

// params reads a request's parameters the four ways the Bot API accepts.
func params(r *http.Request) (map[string]string, error) {
	p := map[string]string{}
	for k, v := range r.URL.Query() {
		p[k] = v[0]
	}
	if r.Method != http.MethodPost {
		return p, nil
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		var m map[string]json.RawMessage
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			return nil, err
		}
		if len(body) > 0 {
			if err := json.Unmarshal(body, &m); err != nil {
				return nil, err
			}
		}
		for k, v := range m {
			var s string
			if json.Unmarshal(v, &s) == nil {
				p[k] = s
			} else {
				p[k] = string(v)
			}
		}
	case "multipart/form-data":
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			return nil, err
		}
		if len(body) == 0 {
			return p, nil // a call without parameters
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			return nil, err
		}
		for k, v := range r.MultipartForm.Value {
			p[k] = v[0]
		}
	case "application/x-www-form-urlencoded":
		if err := r.ParseForm(); err != nil {
			return nil, err
		}
		for k, v := range r.PostForm {
			p[k] = v[0]
		}
	}
	return p, nil
}

func (f *Fake) serve(w http.ResponseWriter, r *http.Request) {
	rest, found := strings.CutPrefix(r.URL.Path, "/bot")
	tok, method, found2 := strings.Cut(rest, "/")
	if !found || !found2 {
		apiError(w, http.StatusNotFound, "Not Found", 0)
		return
	}
	p, err := params(r)
	if err != nil {
		apiError(w, http.StatusBadRequest, "Bad Request: can't parse request", 0)
		return
	}
	f.mu.Lock()
	f.calls = append(f.calls, Call{Method: method, Path: r.URL.Path, Params: p})
	f.cond.Broadcast()
	if tok != f.token {
		f.mu.Unlock()
		apiError(w, http.StatusUnauthorized, "Unauthorized", 0)
		return
	}
	if q := f.fails[method]; len(q) > 0 {
		fl := q[0]
		f.fails[method] = q[1:]
		f.mu.Unlock()
		switch {
		case fl.code == http.StatusTooManyRequests:
			apiError(w, fl.code, fmt.Sprintf("Too Many Requests: retry after %d", fl.retryAfter), fl.retryAfter)
		case fl.code == http.StatusBadGateway:
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(fl.code)
			_, _ = io.WriteString(w, "<html><head><title>502 Bad Gateway</title></head><body>502 Bad Gateway</body></html>\n")
		default:
			apiError(w, fl.code, http.StatusText(fl.code), 0)
		}
		return
	}
	switch method {
	case "getMe":
		f.mu.Unlock()
		ok(w, user{ID: BotID, IsBot: true, FirstName: "Hobbs", Username: "hobbs_test_bot"})
	case "getUpdates":
		f.getUpdates(w, r, p) // unlocks
	case "sendMessage":
		defer f.mu.Unlock()
		f.sendMessage(w, p)
	case "editMessageText":
		defer f.mu.Unlock()
		f.editMessageText(w, p)
	case "answerCallbackQuery":
		defer f.mu.Unlock()
		id := p["callback_query_id"]
		answered, exists := f.queries[id]
		if !exists || answered {
			apiError(w, http.StatusBadRequest, "Bad Request: query is too old and response timeout expired or query ID is invalid", 0)
			return
		}
		if utf16Len(p["text"]) > 200 {
			apiError(w, http.StatusBadRequest, "Bad Request: MESSAGE_TOO_LONG", 0)
			return
		}
		f.queries[id] = true
		f.answers = append(f.answers, Answer{QueryID: id, Text: p["text"]})
		f.changeLocked()
		ok(w, true)
	default:
		f.mu.Unlock()
		apiError(w, http.StatusNotFound, "Not Found: method not found", 0)
	}
}

func intParam(p map[string]string, name string, def int64) (int64, error) {
	s, found := p[name]
	if !found || s == "" {
		return def, nil
	}
	return strconv.ParseInt(s, 10, 64)
}

func (f *Fake) getUpdates(w http.ResponseWriter, r *http.Request, p map[string]string) {
	offset, err1 := intParam(p, "offset", 0)
	limit, err2 := intParam(p, "limit", 100)
	timeout, err3 := intParam(p, "timeout", 0)
	if err1 != nil || err2 != nil || err3 != nil {
		f.mu.Unlock()
		apiError(w, http.StatusBadRequest, "Bad Request: wrong parameter", 0)
		return
	}
	if limit < 1 || limit > 100 {
		limit = 100
	}
	if s, found := p["allowed_updates"]; found {
		var list []string
		if err := json.Unmarshal([]byte(s), &list); err != nil {
			f.mu.Unlock()
			apiError(w, http.StatusBadRequest, "Bad Request: can't parse allowed updates", 0)
			return
		}
		f.allowed = list
	}
	if offset > 0 {
		if offset > f.confirmed {
			f.confirmed = offset
		}
		kept := f.updates[:0]
		for _, u := range f.updates {
			if u.ID >= offset {
				kept = append(kept, u)
			}
		}
		f.updates = kept
	}
	f.pollGen++
	gen := f.pollGen
	f.changeLocked() // a newer poll terminates the one held before it
	deadline := time.After(time.Duration(timeout) * time.Second)
	for {
		if gen != f.pollGen {
			f.mu.Unlock()
			apiError(w, http.StatusConflict, "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running", 0)
			return
		}
		if len(f.updates) > 0 || timeout <= 0 || f.closed {
			out := f.updates
			if int64(len(out)) > limit {
				out = out[:limit]
			}
			out = append([]update(nil), out...)
			f.mu.Unlock()
			ok(w, out)
			return
		}
		ch := f.changed
		f.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			timeout = 0
		case <-r.Context().Done():
			return
		}
		f.mu.Lock()
	}
}

func utf16Len(s string) int { return len(utf16.Encode([]rune(s))) }

// keyboard reads reply_markup; only inline keyboards are checked.
func keyboard(s string) ([][]Button, string) {
	if s == "" {
		return nil, ""
	}
	var m inlineKeyboard
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, "Bad Request: can't parse reply keyboard markup JSON object"
	}
	for _, row := range m.InlineKeyboard {
		for _, b := range row {
			if b.Text == "" {
				return nil, "Bad Request: text buttons are unallowed in the inline keyboard"
			}
			if n := len(b.CallbackData); n < 1 || n > 64 {
				return nil, "Bad Request: BUTTON_DATA_INVALID"
			}
		}
	}
	return m.InlineKeyboard, ""
}

func (f *Fake) checkText(text string) string {
	switch n := utf16Len(text); {
	case strings.TrimSpace(text) == "":
		return "Bad Request: message text is empty"
	case n > 4096:
		return "Bad Request: message is too long"
	}
	return ""
}

func (f *Fake) sendMessage(w http.ResponseWriter, p map[string]string) {
	chatID, err := intParam(p, "chat_id", 0)
	if err != nil || chatID == 0 {
		apiError(w, http.StatusBadRequest, "Bad Request: chat_id is empty", 0)
		return
	}
	typ, known := f.chats[chatID]
	if !known {
		apiError(w, http.StatusBadRequest, "Bad Request: chat not found", 0)
		return
	}
	if msg := f.checkText(p["text"]); msg != "" {
		apiError(w, http.StatusBadRequest, msg, 0)
		return
	}
	kb, msg := keyboard(p["reply_markup"])
	if msg != "" {
		apiError(w, http.StatusBadRequest, msg, 0)
		return
	}
	f.nextMsg++
	s := &Sent{ID: f.nextMsg, Chat: chatID, Text: p["text"], Keyboard: kb}
	f.sent = append(f.sent, s)
	f.changeLocked()
	ok(w, f.asMessage(s, typ))
}

func (f *Fake) asMessage(s *Sent, typ string) message {
	m := message{ID: s.ID, From: &user{ID: BotID, IsBot: true, FirstName: "Hobbs"}, Date: time.Now().Unix(),
		Chat: chat{ID: s.Chat, Type: typ}, Text: s.Text}
	if s.Keyboard != nil {
		m.ReplyMarkup = &inlineKeyboard{s.Keyboard}
	}
	return m
}

func (f *Fake) editMessageText(w http.ResponseWriter, p map[string]string) {
	chatID, err1 := intParam(p, "chat_id", 0)
	msgID, err2 := intParam(p, "message_id", 0)
	if err1 != nil || err2 != nil || chatID == 0 || msgID == 0 {
		apiError(w, http.StatusBadRequest, "Bad Request: message identifier is not specified", 0)
		return
	}
	var s *Sent
	for _, x := range f.sent {
		if x.Chat == chatID && int64(x.ID) == msgID {
			s = x
		}
	}
	if s == nil {
		apiError(w, http.StatusBadRequest, "Bad Request: message to edit not found", 0)
		return
	}
	if msg := f.checkText(p["text"]); msg != "" {
		apiError(w, http.StatusBadRequest, msg, 0)
		return
	}
	kb, msg := keyboard(p["reply_markup"])
	if msg != "" {
		apiError(w, http.StatusBadRequest, msg, 0)
		return
	}
	if s.Text == p["text"] && len(kb) == len(s.Keyboard) && len(kb) == 0 {
		apiError(w, http.StatusBadRequest, "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message", 0)
		return
	}
	s.Text, s.Keyboard = p["text"], kb
	s.Edits++
	f.changeLocked()
	ok(w, f.asMessage(s, f.chats[chatID]))
}
