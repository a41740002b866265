package telegram

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/channel"
	"github.com/hobbs-agent/hobbs/src/channel/telegram/telegramtest"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

const (
	owner    = int64(5550001)
	stranger = int64(6660002)
	waitFor  = 10 * time.Second
)

// clock is the tests' controllable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// host is a channel.Host that records its calls.
type host struct {
	mu    sync.Mutex
	calls []string
	acts  []channel.Action
	chat  func(conv, text string) string
}

func (h *host) record(s string) {
	h.mu.Lock()
	h.calls = append(h.calls, s)
	h.mu.Unlock()
}

func (h *host) Calls() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.calls...)
}

func (h *host) Acts() []channel.Action {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]channel.Action(nil), h.acts...)
}

func (h *host) Status(context.Context) (string, error) {
	h.record("status")
	return "2 sessions, 1 run queued", nil
}

func (h *host) Runs(context.Context) (string, error) {
	h.record("runs")
	return "triage-issue: ok", nil
}

func (h *host) Stop(_ context.Context, name string) (string, error) {
	h.record("stop " + name)
	if name == "nope" {
		return "", errors.New("no session or run named nope")
	}
	if name == "leak" {
		return "", errors.New("engine said: token ghp_abcdefghijklmnopqrstuvwxyz0123456789 refused")
	}
	return "stopped " + name, nil
}

func (h *host) Act(_ context.Context, a channel.Action) (string, error) {
	h.record("act " + a.Kind)
	h.mu.Lock()
	h.acts = append(h.acts, a)
	h.mu.Unlock()
	return a.Kind + " done", nil
}

func (h *host) Chat(_ context.Context, conv string, m channel.Message) (string, error) {
	text := m.Text
	for _, q := range m.Quoted {
		text += " [" + q.Kind + " from " + q.From + ": " + q.Text + "]"
	}
	h.record("chat " + conv + " " + text)
	if h.chat != nil {
		return h.chat(conv, text), nil
	}
	return "you said: " + text, nil
}

// env is one channel against one fake server, with its state directory,
// audit log, clock and the delays it waited.
type env struct {
	t     testing.TB
	fake  *telegramtest.Fake
	dir   string
	clock *clock
	host  *host
	audit *audit.Logger

	mu     sync.Mutex
	cond   *sync.Cond // on mu: done changed
	delays []time.Duration
	logs   []string
	done_  []string // outbox entries sent

	ch     *Channel
	cancel context.CancelFunc
	done   chan error
}

func newEnv(t testing.TB) *env {
	t.Helper()
	root := t.TempDir()
	e := &env{t: t, fake: telegramtest.NewFake(t, ""), dir: root,
		clock: &clock{t: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}, host: &host{}}
	e.cond = sync.NewCond(&e.mu)
	e.audit = audit.New(safefile.Beneath(root), filepath.Join(root, "audit.log"))
	e.audit.Now = e.clock.Now
	return e
}

func (e *env) options() Options {
	return Options{
		APIURL: e.fake.URL, Token: telegramtest.Token,
		FS: safefile.Beneath(e.dir), Dir: filepath.Join(e.dir, "serve", "telegram"),
		Audit: e.audit, Now: e.clock.Now, PollTimeout: 5 * time.Second,
		After: func(d time.Duration) <-chan time.Time {
			e.mu.Lock()
			e.delays = append(e.delays, d)
			e.mu.Unlock()
			c := make(chan time.Time, 1)
			c <- time.Time{}
			return c
		},
		Logf: func(f string, a ...any) {
			e.mu.Lock()
			e.logs = append(e.logs, fmt.Sprintf(f, a...))
			e.mu.Unlock()
		},
	}
}

// start runs a channel until stop or the test's end.
func (e *env) start() {
	e.t.Helper()
	ch, err := New(e.options())
	if err != nil {
		e.t.Fatal(err)
	}
	ch.sentHook = func(id string) {
		e.mu.Lock()
		e.done_ = append(e.done_, id)
		e.cond.Broadcast()
		e.mu.Unlock()
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.ch, e.cancel, e.done = ch, cancel, make(chan error, 1)
	go func() { e.done <- ch.Run(ctx, e.host) }()
	e.t.Cleanup(e.stop)
}

func (e *env) stop() {
	if e.cancel == nil {
		return
	}
	e.cancel()
	if err := <-e.done; err != nil {
		e.t.Errorf("Run: %v", err)
	}
	e.cancel = nil
	if e.t.Failed() {
		e.mu.Lock()
		e.t.Logf("channel log:\n%s", strings.Join(e.logs, "\n"))
		e.mu.Unlock()
	}
}

func (e *env) pair() {
	e.t.Helper()
	p, err := Pair(e.options())
	if err != nil {
		e.t.Fatal(err)
	}
	e.fake.Send(owner, "/start "+p.Code)
	e.waitSent(owner, 1)
}

// waitDone waits until the outbox entry id has been sent and removed.
func (e *env) waitDone(id string) {
	e.t.Helper()
	deadline := time.Now().Add(waitFor)
	timer := time.AfterFunc(waitFor, func() { e.mu.Lock(); e.cond.Broadcast(); e.mu.Unlock() })
	defer timer.Stop()
	e.mu.Lock()
	defer e.mu.Unlock()
	for !slices.Contains(e.done_, id) {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s to be sent", id)
		}
		e.cond.Wait()
	}
}

// waitSent waits until chat has at least n messages and returns them.
func (e *env) waitSent(chat int64, n int) []telegramtest.Sent {
	e.t.Helper()
	e.fake.Wait(e.t, waitFor, fmt.Sprintf("%d messages to %d", n, chat), func(v telegramtest.View) bool { return len(v.Sent(chat)) >= n })
	return e.fake.Sent(chat)
}

// waitHandled waits until update id has been handled and acknowledged.
func (e *env) waitHandled(id int64) {
	e.t.Helper()
	e.fake.Wait(e.t, waitFor, fmt.Sprintf("update %d acknowledged", id), func(v telegramtest.View) bool { return v.Confirmed() > id })
}

func (e *env) auditLog() string {
	b, err := os.ReadFile(filepath.Join(e.dir, "audit.log"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		e.t.Fatal(err)
	}
	return string(b)
}

func (e *env) state() *state {
	e.t.Helper()
	s, err := store{fs: safefile.Beneath(e.dir), dir: filepath.Join(e.dir, "serve", "telegram")}.load()
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

func TestPairGoodCode(t *testing.T) {
	e := newEnv(t)
	e.start()
	p, err := Pair(e.options())
	if err != nil {
		t.Fatal(err)
	}
	if !p.Expires.Equal(e.clock.Now().Add(10 * time.Minute)) {
		t.Errorf("expires %v, want 10 minutes from now", p.Expires)
	}
	raw, _ := os.ReadFile(filepath.Join(e.dir, "serve", "telegram", "state.json"))
	if strings.Contains(string(raw), p.Code) || strings.Contains(string(raw), normaliseCode(p.Code)) {
		t.Errorf("state holds the code in clear: %s", raw)
	}
	e.clock.Add(9 * time.Minute)
	e.fake.Send(owner, "/start "+strings.ToLower(p.Code))
	got := e.waitSent(owner, 1)
	if !strings.HasPrefix(got[0].Text, "Paired") {
		t.Errorf("reply %q", got[0].Text)
	}
	if s := e.state(); !slices.Equal(s.Owners, []int64{owner}) || len(s.Codes) != 0 {
		t.Errorf("owners %v codes %v", s.Owners, s.Codes)
	}
	if !strings.Contains(e.auditLog(), `"event":"telegram.pair","subject":"chat:5550001"`) {
		t.Errorf("audit: %s", e.auditLog())
	}
	e.fake.Send(owner, "/status")
	if got := e.waitSent(owner, 2); got[1].Text != "2 sessions, 1 run queued" {
		t.Errorf("status reply %q", got[1].Text)
	}
}

// refusedPairing sends /start with code from chat and checks that nothing
// answered and that chat did not become an owner.
func (e *env) refusedPairing(chat int64, text string) {
	e.t.Helper()
	id := e.fake.Send(chat, text)
	e.waitHandled(id)
	if s := e.fake.Sent(chat); len(s) != 0 {
		e.t.Errorf("chat %d got %v", chat, s)
	}
	if e.state().isOwner(chat) {
		e.t.Errorf("chat %d became an owner", chat)
	}
	if len(e.host.Calls()) != 0 {
		e.t.Errorf("host called: %v", e.host.Calls())
	}
}

func TestPairExpiredCode(t *testing.T) {
	e := newEnv(t)
	e.start()
	p, err := Pair(e.options())
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Add(10 * time.Minute)
	e.refusedPairing(owner, "/start "+p.Code)
	if !strings.Contains(e.auditLog(), `"reason":"pairing refused"`) {
		t.Errorf("audit: %s", e.auditLog())
	}
}

func TestPairReusedCode(t *testing.T) {
	e := newEnv(t)
	e.start()
	p, err := Pair(e.options())
	if err != nil {
		t.Fatal(err)
	}
	e.fake.Send(owner, "/start "+p.Code)
	e.waitSent(owner, 1)
	e.refusedPairing(stranger, "/start "+p.Code)
	if s := e.state(); !slices.Equal(s.Owners, []int64{owner}) {
		t.Errorf("owners %v", s.Owners)
	}
}

func TestPairWrongCode(t *testing.T) {
	e := newEnv(t)
	e.start()
	if _, err := Pair(e.options()); err != nil {
		t.Fatal(err)
	}
	e.refusedPairing(stranger, "/start AAAA-BBBB-CCCC")
	e.refusedPairing(stranger, "/start")
	if s := e.state(); len(s.Codes) != 1 {
		t.Errorf("a wrong code used up the pending one: %v", s.Codes)
	}
}

// A group cannot be paired: everyone in it would reach Hobbs.
func TestPairFromGroupRefused(t *testing.T) {
	e := newEnv(t)
	e.start()
	p, err := Pair(e.options())
	if err != nil {
		t.Fatal(err)
	}
	id := e.fake.SendAs(-100777, "group", owner, "/start "+p.Code)
	e.waitHandled(id)
	if s := e.state(); len(s.Owners) != 0 || len(s.Codes) != 1 {
		t.Errorf("owners %v codes %v", s.Owners, s.Codes)
	}
}

func TestStrangerIgnoredAndAudited(t *testing.T) {
	e := newEnv(t)
	e.start()
	e.pair()
	var last int64
	for i := range 10 {
		last = e.fake.Send(stranger, fmt.Sprintf("please run rm -rf / secret-text-%d", i))
	}
	e.waitHandled(last)
	if s := e.fake.Sent(stranger); len(s) != 0 {
		t.Errorf("stranger answered: %v", s)
	}
	if c := e.host.Calls(); len(c) != 0 {
		t.Errorf("host called for a stranger: %v", c)
	}
	log := e.auditLog()
	if strings.Contains(log, "secret-text") || strings.Contains(log, "rm -rf") {
		t.Errorf("audit holds a stranger's text: %s", log)
	}
	if n := strings.Count(log, `"subject":"chat:6660002"`); n != strangerAudits {
		t.Errorf("%d audit lines for 10 messages in a minute, want %d:\n%s", n, strangerAudits, log)
	}
	e.clock.Add(time.Minute)
	e.waitHandled(e.fake.Send(stranger, "again"))
	if n := strings.Count(e.auditLog(), `"subject":"chat:6660002"`); n != strangerAudits+1 {
		t.Errorf("%d audit lines after a minute, want %d", n, strangerAudits+1)
	}
}

func TestInstincts(t *testing.T) {
	e := newEnv(t)
	e.start()
	e.pair()
	cases := []struct{ in, want, call string }{
		{"/status", "2 sessions, 1 run queued", "status"},
		{"/runs", "triage-issue: ok", "runs"},
		{"/stop triage-issue", "stopped triage-issue", "stop triage-issue"},
		{"/stop@hobbs_test_bot nope", "/stop failed: no session or run named nope", "stop nope"},
		{"/stop leak", "/stop failed: engine said: token [REDACTED:github-token] refused", "stop leak"},
		{"/stop", "Usage: /stop NAME", ""},
		{"/help", helpText, ""},
		// A chat turn in order with the others: the host's chat starts afresh.
		{"/new@hobbs_test_bot", "you said: /new", "chat " + strconv.FormatInt(owner, 10) + " /new"},
		{"/trust", "you said: /trust", "chat " + strconv.FormatInt(owner, 10) + " /trust"},
	}
	n := 1
	var calls []string
	for _, c := range cases {
		e.fake.Send(owner, c.in)
		n++
		got := e.waitSent(owner, n)
		if got[n-1].Text != c.want {
			t.Errorf("%s: reply %q, want %q", c.in, got[n-1].Text, c.want)
		}
		if c.call != "" {
			calls = append(calls, c.call)
		}
	}
	if got := e.host.Calls(); !slices.Equal(got, calls) {
		t.Errorf("host calls %v, want %v", got, calls)
	}
}

func TestChatTurnReplySplit(t *testing.T) {
	e := newEnv(t)
	var long strings.Builder
	for i := 0; long.Len() < 10000; i++ {
		fmt.Fprintf(&long, "line %d of a long answer with an emoji 🙂\n", i)
	}
	want := long.String()
	e.host.chat = func(conv, text string) string { return want }
	e.start()
	e.pair()
	e.fake.Send(owner, "what happened today?")
	e.fake.Wait(t, waitFor, "the whole reply", func(v telegramtest.View) bool {
		total := 0
		for _, s := range v.Sent(owner)[1:] {
			total += len(s.Text) + 1
		}
		return total >= len(want)
	})
	sent := e.fake.Sent(owner)[1:]
	if len(sent) < 3 {
		t.Fatalf("%d parts", len(sent))
	}
	var joined []string
	for _, s := range sent {
		if utf16Len(s.Text) > MaxText {
			t.Errorf("a part of %d units", utf16Len(s.Text))
		}
		joined = append(joined, s.Text)
	}
	if strings.Join(joined, "\n") != strings.TrimRight(want, "\n") {
		t.Error("the parts do not make up the reply")
	}
	if c := e.host.Calls(); !slices.Equal(c, []string{"chat 5550001 what happened today?"}) {
		t.Errorf("host calls %v", c)
	}
}

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		text string
		max  int
		want []string
	}{
		{"", 10, []string{"(empty)"}},
		{"short", 10, []string{"short"}},
		{"aaaa bbbb cccc", 10, []string{"aaaa bbbb ", "cccc"}},
		{"aaaaaa\nbbb ccc", 10, []string{"aaaaaa", "bbb ccc"}},
		{"abcdefghijkl", 5, []string{"abcde", "fghij", "kl"}},
		{"🙂🙂🙂", 3, []string{"🙂", "🙂", "🙂"}}, // two units each: never half of one
	} {
		if got := split(tc.text, tc.max); !slices.Equal(got, tc.want) {
			t.Errorf("split(%q, %d) = %q, want %q", tc.text, tc.max, got, tc.want)
		}
	}
}

func approvalNotice(id string) channel.Notice {
	return channel.Notice{ID: id, Text: "triage-issue finished: 3 issues labelled. Approve?", Buttons: []channel.Action{
		{Kind: channel.ActApprove, Label: "Approve", Task: "task_20261126_001"},
		{Kind: channel.ActReject, Label: "Reject", Task: "task_20261126_001"},
	}}
}

// sentNotice delivers an approval notice and returns the message with its
// keyboard.
func (e *env) sentNotice(id string, n int) telegramtest.Sent {
	e.t.Helper()
	if err := e.ch.Deliver(approvalNotice(id)); err != nil {
		e.t.Fatal(err)
	}
	msg := e.waitSent(owner, n)[n-1]
	e.waitDone(id) // its buttons are bound to the message
	if len(msg.Keyboard) != 2 {
		e.t.Fatalf("keyboard %v", msg.Keyboard)
	}
	for _, row := range msg.Keyboard {
		if d := row[0].CallbackData; len(d) > 64 || strings.Contains(d, "task") || strings.Contains(d, "approve") {
			e.t.Errorf("callback_data %q is not opaque", d)
		}
	}
	return msg
}

func (e *env) waitAnswers(n int) []telegramtest.Answer {
	e.t.Helper()
	e.fake.Wait(e.t, waitFor, fmt.Sprintf("%d answers", n), func(v telegramtest.View) bool { return v.Answers() >= n })
	return e.fake.Answers()
}

func TestButtonPressByOwner(t *testing.T) {
	e := newEnv(t)
	e.start()
	e.pair()
	msg := e.sentNotice("task:1:review", 2)
	e.fake.Press(owner, owner, msg.ID, msg.Keyboard[0][0].CallbackData)
	if a := e.waitAnswers(1); a[0].Text != "approve done" {
		t.Errorf("answer %q", a[0].Text)
	}
	e.fake.Wait(t, waitFor, "the message edited", func(v telegramtest.View) bool { return v.Sent(owner)[1].Edits == 1 })
	edited := e.fake.Sent(owner)[1]
	if !strings.HasSuffix(edited.Text, "Approve: approve done") || edited.Keyboard != nil {
		t.Errorf("edited to %q with keyboard %v", edited.Text, edited.Keyboard)
	}
	if acts := e.host.Acts(); len(acts) != 1 || acts[0].Kind != channel.ActApprove || acts[0].Task != "task_20261126_001" {
		t.Errorf("acts %v", acts)
	}

	// Replayed: the same button again, then the other one of the notice.
	e.fake.Press(owner, owner, msg.ID, msg.Keyboard[0][0].CallbackData)
	e.fake.Press(owner, owner, msg.ID, msg.Keyboard[1][0].CallbackData)
	a := e.waitAnswers(3)
	if a[1].Text != "Already answered." || a[2].Text != "Already answered." {
		t.Errorf("answers %v", a)
	}
	if acts := e.host.Acts(); len(acts) != 1 {
		t.Errorf("acted %d times", len(acts))
	}
}

func TestButtonPressByStranger(t *testing.T) {
	e := newEnv(t)
	e.start()
	e.pair()
	msg := e.sentNotice("task:1:review", 2)
	data := msg.Keyboard[0][0].CallbackData
	e.fake.Send(stranger, "hi") // the stranger's chat exists
	// The stranger presses the owner's button data in its own chat, and a
	// press in the owner's chat comes from another user.
	q1 := e.fake.Press(stranger, stranger, msg.ID, data)
	q2 := e.fake.Press(owner, stranger, msg.ID, data)
	last := e.fake.Send(owner, "/help")
	e.waitSent(owner, 3)
	e.waitHandled(last)
	if acts := e.host.Acts(); len(acts) != 0 {
		t.Errorf("acted: %v", acts)
	}
	for _, a := range e.fake.Answers() {
		if a.QueryID == q1 || a.QueryID == q2 {
			t.Errorf("a stranger's press was answered: %v", a)
		}
	}
	// The owner's own press still works.
	e.fake.Press(owner, owner, msg.ID, data)
	e.waitAnswers(1)
	if acts := e.host.Acts(); len(acts) != 1 {
		t.Errorf("acts %v", acts)
	}
}

func TestButtonExpired(t *testing.T) {
	e := newEnv(t)
	e.start()
	e.pair()
	msg := e.sentNotice("task:1:review", 2)
	e.clock.Add(ButtonTTL)
	e.fake.Press(owner, owner, msg.ID, msg.Keyboard[0][0].CallbackData)
	if a := e.waitAnswers(1); a[0].Text != "This button has expired." {
		t.Errorf("answer %q", a[0].Text)
	}
	// A forged callback_data, and a real one on another message.
	e.fake.Press(owner, owner, msg.ID, "forged-data")
	e.fake.Press(owner, owner, 1, msg.Keyboard[1][0].CallbackData)
	a := e.waitAnswers(3)
	if a[1].Text != "This button is not valid." || a[2].Text != "This button is not valid." {
		t.Errorf("answers %v", a)
	}
	if acts := e.host.Acts(); len(acts) != 0 {
		t.Errorf("acted: %v", acts)
	}
}

func TestRetryWithoutLoss(t *testing.T) {
	e := newEnv(t)
	e.start()
	e.pair()
	e.fake.Fail("sendMessage", 1, http.StatusTooManyRequests, 7)
	e.fake.Fail("sendMessage", 2, http.StatusBadGateway, 0)
	e.fake.Fail("sendMessage", 1, http.StatusInternalServerError, 0)
	for i := range 5 {
		if err := e.ch.Deliver(channel.Notice{ID: "n" + strconv.Itoa(i), Text: "notice " + strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
	}
	got := e.waitSent(owner, 6)
	for i, s := range got[1:] {
		if s.Text != "notice "+strconv.Itoa(i) {
			t.Errorf("message %d is %q", i, s.Text)
		}
	}
	e.mu.Lock()
	delays := append([]time.Duration(nil), e.delays...)
	e.mu.Unlock()
	if !slices.Contains(delays, 7*time.Second) {
		t.Errorf("retry_after not honoured: waited %v", delays)
	}
	e.waitDone("n4")
	if n := strings.Count(e.auditLog(), `"event":"telegram.deliver"`); n != 5 {
		t.Errorf("%d deliveries audited, want 5", n)
	}
	// Delivered again: sent once.
	if err := e.ch.Deliver(channel.Notice{ID: "n0", Text: "notice 0"}); err != nil {
		t.Fatal(err)
	}
	e.fake.Send(owner, "/help")
	if got := e.waitSent(owner, 7); got[6].Text != helpText {
		t.Errorf("a notice sent twice: %q", got[6].Text)
	}
}

func TestPollRetries(t *testing.T) {
	e := newEnv(t)
	e.fake.Fail("getUpdates", 1, http.StatusTooManyRequests, 3)
	e.fake.Fail("getUpdates", 1, http.StatusBadGateway, 0)
	e.start()
	e.pair()
	e.mu.Lock()
	defer e.mu.Unlock()
	if !slices.Contains(e.delays, 3*time.Second) {
		t.Errorf("retry_after not honoured: %v", e.delays)
	}
}

func TestRestartResumesOffsetAndOutbox(t *testing.T) {
	e := newEnv(t)
	e.start()
	e.pair()
	msg := e.sentNotice("task:1:review", 2)
	e.stop()
	offset := e.state().Offset
	if offset == 0 {
		t.Fatal("no offset stored")
	}

	// While the service is down: the owner writes, notices are delivered.
	e.fake.Send(owner, "/status")
	ch, err := New(e.options())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := ch.Deliver(channel.Notice{ID: "down" + strconv.Itoa(i), Text: "while down " + strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
	}
	before := len(e.fake.Calls())
	e.start()
	got := e.waitSent(owner, 6)
	var texts []string
	for _, s := range got[2:] {
		texts = append(texts, s.Text)
	}
	// The outbox goes first (it was queued before Run started), then the
	// reply to /status.
	want := []string{"while down 0", "while down 1", "while down 2", "2 sessions, 1 run queued"}
	if !slices.Equal(texts, want) {
		t.Errorf("after restart: %q, want %q", texts, want)
	}
	for _, c := range e.fake.Calls()[before:] {
		if c.Method == "getUpdates" {
			if c.Params["offset"] != strconv.FormatInt(offset, 10) {
				t.Errorf("first poll after restart from offset %s, want %d", c.Params["offset"], offset)
			}
			break
		}
	}
	if n := strings.Count(strings.Join(e.host.Calls(), ","), "status"); n != 1 {
		t.Errorf("/status handled %d times", n)
	}
	// The button sent before the restart still works.
	e.fake.Press(owner, owner, msg.ID, msg.Keyboard[1][0].CallbackData)
	if a := e.waitAnswers(1); a[0].Text != "reject done" {
		t.Errorf("answer %v", a)
	}
	// Notices sent before the restart are not sent again.
	for _, id := range []string{"task:1:review", "down0"} {
		if err := e.ch.Deliver(channel.Notice{ID: id, Text: "again " + id}); err != nil {
			t.Fatal(err)
		}
	}
	e.fake.Send(owner, "/help")
	e.fake.Wait(t, waitFor, "the help reply", func(v telegramtest.View) bool {
		return slices.ContainsFunc(v.Sent(owner), func(s telegramtest.Sent) bool { return s.Text == helpText })
	})
	for _, s := range e.fake.Sent(owner) {
		if strings.HasPrefix(s.Text, "again ") {
			t.Errorf("sent twice: %q", s.Text)
		}
	}
}

// A chat turn interrupted by a stop runs again after the restart and is
// answered once.
func TestRestartResumesChatTurn(t *testing.T) {
	e := newEnv(t)
	block := make(chan struct{})
	started := make(chan struct{}, 1)
	e.host.chat = func(conv, text string) string {
		started <- struct{}{}
		<-block
		return "answer"
	}
	e.start()
	e.pair()
	e.fake.Send(owner, "question")
	<-started
	e.cancel() // Run ends while the turn is held
	close(block)
	if err := <-e.done; err != nil {
		t.Fatal(err)
	}
	e.cancel = nil
	e.host.chat = func(conv, text string) string { return "answer" }
	e.start()
	got := e.waitSent(owner, 2)
	if got[1].Text != "answer" {
		t.Errorf("reply %q", got[1].Text)
	}
}

// The token never reaches a log line, an error or the audit log, though
// Telegram puts it in every URL.
func TestTokenRedaction(t *testing.T) {
	e := newEnv(t)
	// A server that drops every connection: net/http's error names the URL.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dropped := make(chan struct{}, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
			select {
			case dropped <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() { ln.Close() })
	o := e.options()
	o.APIURL = "http://" + ln.Addr().String()
	ch, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ch.Run(ctx, e.host) }()
	<-dropped
	<-dropped
	cancel()
	<-done
	if _, err := ch.api.getUpdates(context.Background(), 0, time.Second); err == nil || strings.Contains(err.Error(), telegramtest.Token) {
		t.Errorf("getUpdates error %v", err)
	} else if !strings.Contains(err.Error(), "<token>") {
		t.Errorf("the error does not show where the token was: %v", err)
	}
	if _, err := ch.api.sendMessage(context.Background(), owner, "x", nil); err == nil || strings.Contains(err.Error(), telegramtest.Token) {
		t.Errorf("sendMessage error %v", err)
	}

	// A token Telegram rejects makes Run return an error.
	o = e.options()
	o.Token = "999:WrongTokenValue_abcdefghijklmnopqrstu"
	ch2, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	err = ch2.Run(context.Background(), e.host)
	if err == nil || strings.Contains(err.Error(), o.Token) {
		t.Errorf("Run with a refused token: %v", err)
	}

	e.mu.Lock()
	logs := strings.Join(e.logs, "\n")
	e.mu.Unlock()
	if logs == "" {
		t.Error("no log lines: the test shows nothing")
	}
	for _, s := range []string{logs, e.auditLog()} {
		if strings.Contains(s, telegramtest.Token) || strings.Contains(s, "AAFakeToken") {
			t.Errorf("token in %q", s)
		}
	}
}

// An outbox entry that cannot be parsed is reported, left as it is, and
// does not hold up the rest.
func TestUnreadableOutboxEntry(t *testing.T) {
	e := newEnv(t)
	e.start()
	e.pair()
	bad := filepath.Join(e.dir, "serve", "telegram", "outbox", "0000000000000000-bad.json")
	if err := os.WriteFile(bad, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := e.ch.Deliver(channel.Notice{ID: "after", Text: "after the bad one"}); err != nil {
		t.Fatal(err)
	}
	if got := e.waitSent(owner, 2); got[1].Text != "after the bad one" {
		t.Errorf("got %q", got[1].Text)
	}
	if b, err := os.ReadFile(bad); err != nil || string(b) != "{not json" {
		t.Errorf("bad entry changed: %q %v", b, err)
	}
	if !strings.Contains(e.auditLog(), `"event":"telegram.outbox"`) {
		t.Errorf("not reported: %s", e.auditLog())
	}
}

// Deliver before anyone is paired keeps the notice until the pairing.
func TestDeliverBeforePairing(t *testing.T) {
	e := newEnv(t)
	e.start()
	if err := e.ch.Deliver(channel.Notice{ID: "early", Text: "an early notice"}); err != nil {
		t.Fatal(err)
	}
	e.pair()
	got := e.waitSent(owner, 2)
	if got[0].Text != "an early notice" || !strings.HasPrefix(got[1].Text, "Paired") {
		t.Errorf("got %q, %q", got[0].Text, got[1].Text)
	}
}

// After a week without updates Telegram may number the next one below a
// stored offset: an old offset is not used.
func TestOffsetAfterAWeek(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	s := state{Offset: 42, OffsetAt: t0}
	if got := s.offset(t0.Add(time.Hour)); got != 42 {
		t.Errorf("offset after an hour %d", got)
	}
	if got := s.offset(t0.Add(7 * 24 * time.Hour)); got != 0 {
		t.Errorf("offset after a week %d", got)
	}
}

// Unpair removes an owner on the host: the chat is a stranger from then on,
// and what was queued for it is not sent.
func TestUnpair(t *testing.T) {
	e := newEnv(t)
	e.start()
	e.pair()
	if found, err := Unpair(e.options(), owner); err != nil || !found {
		t.Fatalf("Unpair: %v %v", found, err)
	}
	if err := e.ch.Deliver(channel.Notice{ID: "after-unpair", Text: "not for a stranger"}); err != nil {
		t.Fatal(err)
	}
	e.waitHandled(e.fake.Send(owner, "/status"))
	if s := e.fake.Sent(owner); len(s) != 1 {
		t.Errorf("an unpaired chat got %v", s[1:])
	}
	if c := e.host.Calls(); len(c) != 0 {
		t.Errorf("host called: %v", c)
	}
	if owners, err := Owners(e.options()); err != nil || len(owners) != 0 {
		t.Errorf("owners %v %v", owners, err)
	}
	log := e.auditLog()
	if !strings.Contains(log, `"event":"telegram.unpair"`) || !strings.Contains(log, `"event":"telegram.stranger","subject":"chat:5550001"`) {
		t.Errorf("audit: %s", log)
	}
}

func TestCapText(t *testing.T) {
	if got := capText("short"); got != "short" {
		t.Errorf("capText(short) = %q", got)
	}
	long := strings.Repeat("a", MaxTotalText+100)
	got := capText(long)
	if utf16Len(got) > MaxTotalText || !strings.HasSuffix(got, "[cut: the whole text was 262244 characters]") {
		t.Errorf("capText: %d units, ends %q", utf16Len(got), got[len(got)-40:])
	}
}

func TestCommand(t *testing.T) {
	for _, tc := range []struct{ in, cmd, args string }{
		{"/status", "status", ""},
		{"/STOP@hobbs_bot  triage ", "stop", "triage"},
		{"/stop\ntriage", "stop", "triage"},
		{"/start K7QX-M2PD-W9TR", "start", "K7QX-M2PD-W9TR"},
	} {
		cmd, args, ok := command(tc.in)
		if !ok || cmd != tc.cmd || args != tc.args {
			t.Errorf("command(%q) = %q, %q, %v", tc.in, cmd, args, ok)
		}
	}
	if _, _, ok := command("hello /status"); ok {
		t.Error("text that does not start with / is a command")
	}
}

// A notice Telegram refuses for good (403: the owner blocked the bot) is
// not retried forever ahead of the rest: it is set aside in undelivered/,
// logged and audited, and the next notices go out.
func TestRefusedNoticeDoesNotHoldTheOutbox(t *testing.T) {
	e := newEnv(t)
	e.start()
	e.pair()
	e.fake.Fail("sendMessage", 1, http.StatusForbidden, 0)
	for i := range 2 {
		if err := e.ch.Deliver(channel.Notice{ID: "n" + strconv.Itoa(i), Text: "notice " + strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
	}
	e.waitDone("n1")
	got := e.waitSent(owner, 2)
	if got[1].Text != "notice 1" {
		t.Fatalf("sent %q after the refusal, want notice 1", got[1].Text)
	}
	e.waitDone("n0")
	if !strings.Contains(e.auditLog(), `"event":"telegram.refused","subject":"n0"`) {
		t.Errorf("the refusal is not audited: %s", e.auditLog())
	}
	ents, err := os.ReadDir(filepath.Join(e.dir, "serve", "telegram", "undelivered"))
	if err != nil || len(ents) != 1 {
		t.Fatalf("undelivered/: %v %v", ents, err)
	}
	b, _ := os.ReadFile(filepath.Join(e.dir, "serve", "telegram", "undelivered", ents[0].Name()))
	if !strings.Contains(string(b), "notice 0") || !strings.Contains(string(b), "403") {
		t.Errorf("the undelivered entry: %s", b)
	}
	if out, _ := os.ReadDir(filepath.Join(e.dir, "serve", "telegram", "outbox")); len(out) != 0 {
		t.Errorf("left in the outbox: %v", out)
	}
}

// A button's result whose message cannot be edited (400) comes as
// a message of its own.
func TestUneditableResultIsSent(t *testing.T) {
	e := newEnv(t)
	e.start()
	e.pair()
	msg := e.sentNotice("task:1:review", 2)
	e.fake.Fail("editMessageText", 1, http.StatusBadRequest, 0)
	e.fake.Press(owner, owner, msg.ID, msg.Keyboard[0][0].CallbackData)
	got := e.waitSent(owner, 3)
	if !strings.HasSuffix(got[2].Text, "Approve: approve done") {
		t.Errorf("the result came as %q", got[2].Text)
	}
}

// With two owners, one who blocked the bot and one whose delivery must be
// retried: the retry goes to the second only, and the refusal is recorded
// once.
func TestRefusalIsNotRetried(t *testing.T) {
	const second = int64(5550009)
	e := newEnv(t)
	e.start()
	e.pair()
	p, err := Pair(e.options())
	if err != nil {
		t.Fatal(err)
	}
	e.fake.Send(second, "/start "+p.Code)
	e.waitSent(second, 1)
	e.fake.Fail("sendMessage", 1, http.StatusForbidden, 0)  // the first owner's
	e.fake.Fail("sendMessage", 1, http.StatusBadGateway, 0) // the second's, retried
	if err := e.ch.Deliver(channel.Notice{ID: "n", Text: "to both"}); err != nil {
		t.Fatal(err)
	}
	e.waitDone("n")
	if got := e.fake.Sent(second); len(got) != 2 || got[1].Text != "to both" {
		t.Errorf("the second owner got %v", got)
	}
	if got := e.fake.Sent(owner); len(got) != 1 {
		t.Errorf("the owner who refused was sent %v", got)
	}
	if n := strings.Count(e.auditLog(), `"event":"telegram.refused"`); n != 1 {
		t.Errorf("%d refusals audited, want 1", n)
	}
}
