package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/channel/telegram/telegramtest"
)

// The paired owner's and a stranger's chat ids on the FAKE Bot API server.
const owner, stranger = 4242, 666

// newTelegramServe is newServeEnv with the Telegram channel, against a
// FAKE Bot API server (telegramtest: Telegram's servers cannot be reached
// from here).
func newTelegramServe(t testing.TB) (*serveEnv, *telegramtest.Fake) {
	var fake *telegramtest.Fake
	s := newServeEnv(t, 1, "0s", func(e *env) string {
		fake = telegramtest.NewFake(t, "")
		if r := e.hobbs([]byte(telegramtest.Token), "vault", "set", "telegram-bot"); r.code != 0 {
			t.Fatalf("vault set telegram-bot: %s", r.stderr)
		}
		return "channels:\n  telegram:\n    token: telegram-bot\n    api_url: " + fake.URL + "\n"
	})
	return s, fake
}

// pair returns the code hobbs serve pair telegram prints.
func (s *serveEnv) pair(t testing.TB) string {
	p := s.hobbs(nil, "serve", "pair", "telegram")
	code := strings.TrimSpace(p.stdout)
	if p.code != 0 || code == "" {
		t.Fatalf("serve pair telegram: %d %s", p.code, p.stderr)
	}
	return code
}

// TestServeTelegram: hobbs serve with a Telegram channel, against the FAKE
// Bot API server (telegramtest: Telegram's servers cannot be reached from
// here). The owner pairs with the code hobbs serve pair telegram prints; a
// stranger gets no answer and is audited without their text; /status is
// answered without the model; another text is a chat turn whose reply
// comes back; a correctly signed GitHub issues delivery
// runs the approved supervised playbook and its outcome reaches the paired
// owner with Approve / Reject buttons; the owner's press approves the run.
func TestServeTelegram(t *testing.T) {
	s, fake := newTelegramServe(t)
	code := s.pair(t)
	fake.Send(stranger, "/start "+code+"X")
	fake.Send(stranger, "/status secret-stranger-text")
	fake.Send(owner, "/start "+code)
	fake.Wait(t, time.Minute, "the owner to be paired", func(v telegramtest.View) bool {
		m := v.Sent(owner)
		return len(m) > 0 && strings.HasPrefix(m[0].Text, "Paired")
	})
	fake.Send(owner, "/status")
	fake.Wait(t, time.Minute, "the owner's /status answered", func(v telegramtest.View) bool { return len(v.Sent(owner)) >= 2 })
	// Any other text is a chat turn: a headless turn in a fresh container
	// (the FAKE claude answers with its run script's report), the reply
	// sent back.
	fake.Send(owner, "hello hobbs")
	fake.Wait(t, 3*time.Minute, "the chat turn's reply", func(v telegramtest.View) bool {
		m := v.Sent(owner)
		return len(m) >= 3 && strings.Contains(m[len(m)-1].Text, "triaged the issue")
	})

	r := s.deliver(t, "new-issues", issueBody("octo/repo", 7, "Login fails", "It fails."), "tg-1", hookSecret)
	if r.code != 202 {
		t.Fatalf("signed delivery: %d %+v\n%s", r.code, r, s.log())
	}
	tk := s.taskOf(t, r.Job, 3*time.Minute)
	var notice telegramtest.Sent
	fake.Wait(t, 3*time.Minute, "the run's outcome to reach the owner", func(v telegramtest.View) bool {
		for _, m := range v.Sent(owner) {
			if strings.Contains(m.Text, "task "+tk) {
				notice = m
				return true
			}
		}
		return false
	})
	for _, want := range []string{"triage-issue (trigger new-issues): ok", "ok - triaged the issue", "approve or reject"} {
		if !strings.Contains(notice.Text, want) {
			t.Errorf("the owner's notice lacks %q:\n%s", want, notice.Text)
		}
	}
	if len(notice.Keyboard) != 2 || notice.Keyboard[0][0].Text != "Approve" || notice.Keyboard[1][0].Text != "Reject" {
		t.Fatalf("the notice's buttons: %+v", notice.Keyboard)
	}
	// A stranger's press of the owner's button counts for nothing; the
	// owner's approves the run.
	fake.Press(owner, stranger, notice.ID, notice.Keyboard[0][0].CallbackData)
	fake.Press(owner, owner, notice.ID, notice.Keyboard[0][0].CallbackData)
	fake.Wait(t, time.Minute, "the press to be answered", func(v telegramtest.View) bool {
		for _, m := range v.Sent(owner) {
			if m.ID == notice.ID && m.Edits > 0 {
				return true
			}
		}
		return false
	})
	rec, _ := os.ReadFile(filepath.Join(s.inst, "logs", "tasks", tk+".md"))
	if !strings.Contains(string(rec), "review: approved") {
		t.Errorf("the owner's Approve did not approve the run:\n%s", rec)
	}

	if m := fake.Sent(stranger); len(m) != 0 {
		t.Errorf("the stranger got answers: %+v", m)
	}
	aud, _ := os.ReadFile(filepath.Join(s.inst, "logs", "audit.log"))
	if !strings.Contains(string(aud), `"event":"telegram.stranger"`) || strings.Contains(string(aud), "secret-stranger-text") {
		t.Errorf("the stranger's messages: want audited without their text")
	}
	if strings.Contains(string(aud), telegramtest.Token) || strings.Contains(s.log(), telegramtest.Token) {
		t.Errorf("the bot token is in the audit log or serve's log")
	}
}
