package mail_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/mail"
	"github.com/hobbs-agent/hobbs/src/mail/mailtest"
)

// TestReply: a reply is submitted with the credentials, to the one
// address, threaded; an address list or a header injection in To is
// refused before anything is sent.
func TestReply(t *testing.T) {
	s := mailtest.StartSMTP(t)
	r := mail.Reply{Addr: s.Addr, TLS: "none", User: s.User, Password: s.Password, From: "hobbs@test",
		To: "alice@example.org", Subject: "Invoice", InReplyTo: "<a@x>", References: []string{"<r@x>", "<a@x>"}, Body: "done"}
	if err := r.Send(); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-s.Got:
		d := string(c.Data)
		if len(c.To) != 1 || c.To[0] != "alice@example.org" || !strings.Contains(d, "In-Reply-To: <a@x>") ||
			!strings.Contains(d, "References: <r@x> <a@x>") || !strings.Contains(d, "Subject: Re: Invoice") {
			t.Errorf("caught %v:\n%s", c.To, d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("nothing caught")
	}
	for _, to := range []string{"alice@example.org, bob@attacker.example", "alice@example.org\r\nBcc: bob@attacker.example", "Alice <alice@example.org>"} {
		r.To = to
		if err := r.Send(); err == nil {
			t.Errorf("sent to %q", to)
		}
	}
	r.To, r.Password = "alice@example.org", "wrong"
	if err := r.Send(); err == nil || !strings.Contains(err.Error(), "log in") {
		t.Errorf("a wrong password: %v", err)
	}
}
