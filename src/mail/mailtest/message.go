package mailtest

import (
	"bytes"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/emersion/go-msgauth/dkim"
)

var msgSeq atomic.Int64

// Message is a plain text message from → to; extra are more header lines
// ("In-Reply-To: <…>").
func Message(from, to, subject, body string, extra ...string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "From: %s\r\nTo: %s\r\nSubject: %s\r\nDate: %s\r\nMessage-ID: <m%d.%d@test.example>\r\n",
		from, to, subject, time.Now().UTC().Format(time.RFC1123Z), time.Now().UnixNano(), msgSeq.Add(1))
	for _, h := range extra {
		b.WriteString(h + "\r\n")
	}
	if !strings.Contains(strings.Join(extra, "\n"), "Content-Type:") {
		b.WriteString("MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n")
	}
	b.WriteString("\r\n")
	b.WriteString(strings.ReplaceAll(strings.ReplaceAll(body, "\r\n", "\n"), "\n", "\r\n"))
	return b.Bytes()
}

// Sign signs raw with k (selector test), covering From, To, Subject,
// Date and Message-ID, and returns the signed message.
func (k Key) Sign(raw []byte) []byte {
	var out bytes.Buffer
	err := dkim.Sign(&out, bytes.NewReader(raw), &dkim.SignOptions{Domain: k.Domain, Selector: "test", Signer: k.Priv,
		HeaderKeys: []string{"From", "To", "Subject", "Date", "Message-ID", "In-Reply-To", "References", "Content-Type"}})
	if err != nil {
		panic(err)
	}
	return out.Bytes()
}
