package mailtest

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Caught is one message the catching SMTP server took.
type Caught struct {
	User string // who logged in
	From string
	To   []string
	Data []byte
}

// SMTP is a submission server on loopback (go-smtp's server) that takes
// every message from User with Password and keeps it: the catching side
// of a reply.
type SMTP struct {
	Addr     string
	User     string
	Password string
	Got      chan Caught
	mu       sync.Mutex
}

// StartSMTP starts a catching server for t.
func StartSMTP(t testing.TB) *SMTP {
	t.Helper()
	s := &SMTP{User: "hobbs", Password: "smtp-test-password", Got: make(chan Caught, 100)}
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) { return &smtpSession{s: s}, nil }))
	srv.Domain, srv.AllowInsecureAuth = "localhost", true
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Addr = ln.Addr().String()
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return s
}

type smtpSession struct {
	s    *SMTP
	user string
	c    Caught
}

func (x *smtpSession) AuthMechanisms() []string { return []string{sasl.Plain} }

func (x *smtpSession) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(identity, user, pass string) error {
		if user != x.s.User || pass != x.s.Password {
			return errors.New("bad credentials")
		}
		x.user = user
		return nil
	}), nil
}

func (x *smtpSession) Mail(from string, _ *smtp.MailOptions) error {
	if x.user == "" {
		return smtp.ErrAuthRequired
	}
	x.c = Caught{User: x.user, From: from}
	return nil
}

func (x *smtpSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	x.c.To = append(x.c.To, to)
	return nil
}

func (x *smtpSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	x.c.Data = b
	x.s.Got <- x.c
	return nil
}

func (x *smtpSession) Reset()        { x.c = Caught{} }
func (x *smtpSession) Logout() error { return nil }
