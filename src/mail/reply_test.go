package mail_test

import (
	"crypto/tls"
	"errors"
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

// reply is a threaded reply to alice@example.org through s, as mode says,
// trusting cfg (nil: the system's roots).
func reply(s *mailtest.SMTP, mode string, cfg *tls.Config) mail.Reply {
	return mail.Reply{Addr: s.Addr, TLS: mode, User: s.User, Password: s.Password, From: "hobbs@test",
		To: "alice@example.org", Subject: "Invoice", InReplyTo: "<a@x>", References: []string{"<a@x>"}, Body: "done", TLSConfig: cfg}
}

// caught is the one message s caught, failing t when none comes.
func caught(t *testing.T, s *mailtest.SMTP) mailtest.Caught {
	t.Helper()
	select {
	case c := <-s.Got:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("nothing caught")
	}
	return mailtest.Caught{}
}

// TestReplyTLS: against go-smtp's server on loopback with a throwaway
// certificate, a reply goes over implicit TLS (465) and over STARTTLS
// (587), encrypted before the login, to the triggering sender alone,
// threaded.
func TestReplyTLS(t *testing.T) {
	for _, mode := range []string{mailtest.SMTPOverTLS, mailtest.SMTPStartTLS} {
		t.Run(mode, func(t *testing.T) {
			s := mailtest.StartSMTPWith(t, mode)
			r := reply(s, mode, mail.TLSConfig("127.0.0.1", s.Roots))
			if err := r.Send(); err != nil {
				t.Fatal(err)
			}
			c := caught(t, s)
			d := string(c.Data)
			if !c.TLS || c.User != s.User || len(c.To) != 1 || c.To[0] != "alice@example.org" ||
				!strings.Contains(d, "In-Reply-To: <a@x>") || !strings.Contains(d, "Subject: Re: Invoice") {
				t.Errorf("caught over TLS %v as %q to %v:\n%s", c.TLS, c.User, c.To, d)
			}
		})
	}
}

// TestReplyUntrusted: a server whose certificate does not verify (the
// system's roots do not hold it, or it is for another name) is refused
// with ErrUntrusted, over implicit TLS and STARTTLS alike: the password is
// never sent and nothing goes in the clear instead.
func TestReplyUntrusted(t *testing.T) {
	for _, mode := range []string{mailtest.SMTPOverTLS, mailtest.SMTPStartTLS} {
		t.Run(mode, func(t *testing.T) {
			s := mailtest.StartSMTPWith(t, mode)
			for name, cfg := range map[string]*tls.Config{"system roots": nil, "another name": mail.TLSConfig("mail.example.org", s.Roots)} {
				r := reply(s, mode, cfg)
				if err := r.Send(); !errors.Is(err, mail.ErrUntrusted) {
					t.Errorf("%s: %v, want ErrUntrusted", name, err)
				}
			}
			nothingSent(t, s)
		})
	}
}

// TestReplyNoStartTLS: with STARTTLS asked for, a server that does not
// offer it (a downgrade stripping it, or a plain server) is refused with
// ErrNoStartTLS before the login: the password is never sent in the
// clear.
func TestReplyNoStartTLS(t *testing.T) {
	s := mailtest.StartSMTPWith(t, mailtest.SMTPPlain)
	r := reply(s, "starttls", nil)
	if err := r.Send(); !errors.Is(err, mail.ErrNoStartTLS) {
		t.Errorf("%v, want ErrNoStartTLS", err)
	}
	nothingSent(t, s)
}

// nothingSent fails t when s was sent a password or a message.
func nothingSent(t *testing.T, s *mailtest.SMTP) {
	t.Helper()
	if n := s.Logins.Load(); n != 0 {
		t.Errorf("the server was sent %d passwords", n)
	}
	select {
	case c := <-s.Got:
		t.Errorf("sent to %v", c.To)
	default:
	}
}

// TestRoots: tls_ca's PEM makes the only roots trusted; a file without a
// certificate is refused.
func TestRoots(t *testing.T) {
	s := mailtest.StartSMTPWith(t, mailtest.SMTPStartTLS)
	roots, err := mail.Roots(s.CertPEM)
	if err != nil {
		t.Fatal(err)
	}
	r := reply(s, "starttls", mail.TLSConfig("127.0.0.1", roots))
	if err := r.Send(); err != nil {
		t.Fatal(err)
	}
	if c := caught(t, s); !c.TLS {
		t.Errorf("not over TLS")
	}
	if _, err := mail.Roots([]byte("not a certificate")); err == nil {
		t.Errorf("a file without a certificate was taken")
	}
}
