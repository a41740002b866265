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

func (r Reply) dial() (*smtp.Client, error) {
	host, _, err := net.SplitHostPort(r.Addr)
	if err != nil {
		return nil, err
	}
	cfg := r.TLSConfig
	if cfg == nil {
		cfg = &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	}
	switch r.TLS {
	case "implicit":
		return smtp.DialTLS(r.Addr, cfg)
	case "none":
		ip := net.ParseIP(strings.Trim(host, "[]"))
		if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return nil, errors.New("refusing to send a password in the clear to a host that is not loopback")
		}
		return smtp.Dial(r.Addr)
	}
	return smtp.DialStartTLS(r.Addr, cfg)
}
