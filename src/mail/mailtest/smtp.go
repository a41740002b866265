package mailtest

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Caught is one message the catching SMTP server took.
type Caught struct {
	User string // who logged in
	TLS  bool   // the session was encrypted
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
	// Logins counts the passwords the server was sent, right or wrong.
	Logins atomic.Int32
	// Roots trusts the server's certificate, CertPEM is it (SMTPOverTLS
	// and SMTPStartTLS).
	Roots   *x509.CertPool
	CertPEM []byte
	mu      sync.Mutex
}

// The ways a catching server takes connections.
const (
	SMTPPlain    = "plain"    // no TLS, no STARTTLS offered; logins taken in the clear
	SMTPStartTLS = "starttls" // STARTTLS offered (587); no login before it
	SMTPOverTLS  = "implicit" // TLS from the first byte (465)
)

// StartSMTP starts a catching server for t, without TLS.
func StartSMTP(t testing.TB) *SMTP { return StartSMTPWith(t, SMTPPlain) }

// StartSMTPWith starts a catching server for t taking connections as mode
// says, with a throwaway certificate for 127.0.0.1 and localhost where it
// has TLS.
func StartSMTPWith(t testing.TB, mode string) *SMTP {
	t.Helper()
	s := &SMTP{User: "hobbs", Password: "smtp-test-password", Got: make(chan Caught, 100)}
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		return &smtpSession{s: s, conn: c}, nil
	}))
	srv.Domain, srv.AllowInsecureAuth = "localhost", mode == SMTPPlain
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if mode != SMTPPlain {
		certPEM, keyPEM, roots := selfSigned(t)
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		s.Roots, s.CertPEM = roots, certPEM
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
		if mode == SMTPOverTLS {
			ln = tls.NewListener(ln, srv.TLSConfig)
		}
	}
	s.Addr = ln.Addr().String()
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return s
}

type smtpSession struct {
	s    *SMTP
	conn *smtp.Conn
	user string
	c    Caught
}

func (x *smtpSession) AuthMechanisms() []string { return []string{sasl.Plain} }

func (x *smtpSession) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(identity, user, pass string) error {
		x.s.Logins.Add(1)
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
	_, isTLS := x.conn.TLSConnectionState()
	x.c = Caught{User: x.user, TLS: isTLS, From: from}
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
