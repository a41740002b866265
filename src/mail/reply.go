package mail

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/emersion/go-message/mail"
	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Reply is a run's answer to the message that started it: sent over SMTP
// submission, threaded (In-Reply-To, References), to To alone — the
// sender Check accepted, never an address from the message's body or the
// run's output.
type Reply struct {
	Addr       string // the submission server, HOST:PORT
	TLS        string // implicit, starttls, none (loopback only)
	User       string
	Password   string
	From       string // the mailbox's own address
	To         string
	Subject    string // the original's; "Re: " is added
	InReplyTo  string
	References []string
	Body       string
	TLSConfig  *tls.Config // nil: the system's roots
}

// maxReplyBody bounds a reply's text.
const maxReplyBody = 64 << 10

// Send submits the reply.
func (r Reply) Send() error {
	to, err := mail.ParseAddress(r.To)
	if err != nil || to.Address != r.To || strings.ContainsAny(r.To, "\r\n,;") {
		return fmt.Errorf("%q is not one mail address", r.To)
	}
	var h mail.Header
	h.SetDate(time.Now())
	h.SetAddressList("From", []*mail.Address{{Address: r.From}})
	h.SetAddressList("To", []*mail.Address{{Address: r.To}})
	subj := clean(r.Subject, 200)
	if !strings.HasPrefix(strings.ToLower(subj), "re:") {
		subj = "Re: " + subj
	}
	h.SetSubject(subj)
	if err := h.GenerateMessageID(); err != nil {
		return err
	}
	if id := strings.Trim(msgID(r.InReplyTo), "<>"); id != "" {
		h.SetMsgIDList("In-Reply-To", []string{id})
	}
	var refs []string
	for _, ref := range r.References {
		if id := strings.Trim(msgID(ref), "<>"); id != "" {
			refs = append(refs, id)
		}
	}
	if len(refs) > 0 {
		h.SetMsgIDList("References", refs)
	}
	h.Set("Auto-Submitted", "auto-replied")
	h.SetContentType("text/plain", map[string]string{"charset": "utf-8"})
	body := strings.ToValidUTF8(r.Body, "\uFFFD")
	if len(body) > maxReplyBody {
		body = body[:maxReplyBody]
	}
	var msg bytes.Buffer
	w, err := mail.CreateSingleInlineWriter(&msg, h)
	if err != nil {
		return err
	}
	if _, err := w.Write([]byte(body)); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	c, err := r.dial()
	if err != nil {
		return fmt.Errorf("connect to %s: %w", r.Addr, err)
	}
	defer c.Close()
	if r.User != "" {
		if err := c.Auth(sasl.NewPlainClient("", r.User, r.Password)); err != nil {
			return fmt.Errorf("log in to %s: %w", r.Addr, err)
		}
	}
	if err := c.SendMail(r.From, []string{r.To}, &msg); err != nil {
		return fmt.Errorf("send to %s: %w", r.To, err)
	}
	return c.Quit()
}

// dialTimeout bounds connecting to the submission server.
const dialTimeout = 30 * time.Second

// dial connects as r.TLS says: implicit TLS, STARTTLS (refused with
// ErrNoStartTLS when the server does not offer it), or none on loopback
// alone. A certificate that does not verify is ErrUntrusted; nothing of
// the login or the message is sent before TLS is up.
func (r Reply) dial() (*smtp.Client, error) {
	host, _, err := net.SplitHostPort(r.Addr)
	if err != nil {
		return nil, err
	}
	cfg := r.TLSConfig
	if cfg == nil {
		cfg = TLSConfig(host, nil)
	}
	d := &net.Dialer{Timeout: dialTimeout}
	switch r.TLS {
	case "implicit":
		conn, err := tls.DialWithDialer(d, "tcp", r.Addr, cfg)
		if err != nil {
			return nil, tlsError(err)
		}
		return smtp.NewClient(conn), nil
	case "none":
		ip := net.ParseIP(strings.Trim(host, "[]"))
		if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return nil, errors.New("refusing to send a password in the clear to a host that is not loopback")
		}
		conn, err := d.Dial("tcp", r.Addr)
		if err != nil {
			return nil, err
		}
		return smtp.NewClient(conn), nil
	}
	conn, err := d.Dial("tcp", r.Addr)
	if err != nil {
		return nil, err
	}
	c, err := smtp.NewClientStartTLS(conn, cfg)
	if err != nil {
		// go-smtp says so in words alone (TestReplyNoStartTLS holds it
		// to them).
		if strings.Contains(err.Error(), "support STARTTLS") {
			return nil, ErrNoStartTLS
		}
		return nil, tlsError(err)
	}
	// The handshake is done by the first command after STARTTLS: the
	// greeting, here, so that a certificate that does not verify is
	// told as such before the login is tried.
	if err := c.Hello("localhost"); err != nil {
		c.Close()
		return nil, tlsError(err)
	}
	return c, nil
}
