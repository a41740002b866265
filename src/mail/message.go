// Package mail is the mail trigger's logic: a mailbox watched over IMAP
// (Watcher: IDLE where the server offers it, polling where not, the last
// UID and UIDVALIDITY kept by the caller), who sent a message (Check: the
// sender listed and its domain's DKIM signature verified, or the trusted
// receiving server's Authentication-Results), the message as data (Parse:
// the headers that matter, the text, the attachments, under Limits) and the
// reply to its sender (Reply, over SMTP submission).
//
// Every message is hostile input: it is parsed under caps (size, parts,
// depth, attachments), an archive is listed, never unpacked, and nothing in
// it is followed, run or trusted; what a run is told of it is data. hobbs
// serve (src/serve, mail.go) wires this package to its queue.
package mail

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/mail"
	"path"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/emersion/go-message"
	_ "github.com/emersion/go-message/charset" // decodes the charsets mail uses, into UTF-8
	gomail "github.com/emersion/go-message/mail"
	"golang.org/x/net/html"
)

// Limits bound what Parse reads of one message.
type Limits struct {
	Message          int64 // the raw message, in bytes
	Parts            int   // MIME parts, all levels
	Depth            int   // multipart nesting
	Attachments      int   // attachments kept
	AttachmentSize   int64 // one attachment, decoded
	AttachmentsTotal int64 // all attachments together, decoded
	Text             int   // the text the run is given, in bytes
	Header           int   // one header's value as given, in bytes
}

// DefaultLimits are the caps of a trigger that sets none.
var DefaultLimits = Limits{Message: 10 << 20, Parts: 100, Depth: 16, Attachments: 20, AttachmentSize: 5 << 20,
	AttachmentsTotal: 10 << 20, Text: 256 << 10, Header: 2 << 10}

// Message is a message as a run is given it: every field but the note of
// what was dropped comes from the sender and is untrusted.
type Message struct {
	From       string       `json:"from"` // the sender's address
	FromName   string       `json:"from_name,omitempty"`
	To         []string     `json:"to,omitempty"`
	Cc         []string     `json:"cc,omitempty"`
	Subject    string       `json:"subject"`
	Date       string       `json:"date,omitempty"`
	MessageID  string       `json:"message_id,omitempty"`
	InReplyTo  []string     `json:"in_reply_to,omitempty"`
	References []string     `json:"references,omitempty"`
	Text       string       `json:"text"` // the text part, or the HTML part reduced to text
	HTML       bool         `json:"from_html,omitempty"`
	Attach     []Attachment `json:"attachments"`
	// Dropped says what the caps left out (parts over the count, parts
	// nested too deep, text cut, attachments over the size).
	Dropped []string `json:"dropped,omitempty"`
}

// Attachment is one attached file. Data is its decoded content (nil when
// dropped over the caps); an archive is never unpacked.
type Attachment struct {
	Name    string `json:"name"` // safe as a file name: File
	Type    string `json:"type"`
	Size    int64  `json:"size"` // decoded bytes read (at most the cap plus one)
	Archive bool   `json:"archive,omitempty"`
	File    string `json:"file,omitempty"` // where the run finds it; empty: not given (over a cap)
	Data    []byte `json:"-"`
}

// Thread is the message's thread: the first of References, else
// In-Reply-To, else its own Message-ID (a new thread).
func (m *Message) Thread() string {
	switch {
	case len(m.References) > 0:
		return m.References[0]
	case len(m.InReplyTo) > 0:
		return m.InReplyTo[0]
	}
	return m.MessageID
}

// ErrTooLarge is a message over Limits.Message.
var ErrTooLarge = errors.New("message over the size cap")

// Parse reads raw under lim. A message whose header does not parse, or
// that is over the size cap, is an error; a body that is malformed part
// way yields what was read before, noted in Dropped.
func Parse(raw []byte, lim Limits) (*Message, error) {
	if int64(len(raw)) > lim.Message {
		return nil, ErrTooLarge
	}
	e, err := message.ReadWithOptions(bytes.NewReader(raw), &message.ReadOptions{MaxHeaderBytes: 256 << 10})
	if e == nil {
		return nil, fmt.Errorf("the header does not parse: %v", err)
	}
	h := gomail.Header{Header: e.Header}
	m := &Message{Attach: []Attachment{}}
	froms := h.Values("From")
	if len(froms) != 1 {
		return nil, fmt.Errorf("%d From headers", len(froms))
	}
	from, err := parseAddresses(froms[0])
	if err != nil || len(from) != 1 {
		return nil, fmt.Errorf("the From header is not one address")
	}
	m.From, m.FromName = strings.ToLower(from[0].Address), clean(from[0].Name, lim.Header)
	for _, k := range []string{"To", "Cc"} {
		as, _ := parseAddresses(h.Get(k))
		for i, a := range as {
			if i == 50 {
				m.Dropped = append(m.Dropped, k+": addresses after the 50th")
				break
			}
			if k == "To" {
				m.To = append(m.To, clean(a.Address, lim.Header))
			} else {
				m.Cc = append(m.Cc, clean(a.Address, lim.Header))
			}
		}
	}
	m.Subject = clean(decodeWords(h.Get("Subject")), lim.Header)
	if d, err := h.Date(); err == nil {
		m.Date = d.UTC().Format(time.RFC3339)
	}
	m.MessageID = msgID(h.Get("Message-Id"))
	m.InReplyTo = msgIDs(h.Get("In-Reply-To"), 1)
	m.References = msgIDs(h.Get("References"), 20)

	p := parser{lim: lim, m: m}
	p.walk(e, 0)
	if len(m.Text) > lim.Text {
		cut := lim.Text
		for cut > 0 && !utf8.RuneStart(m.Text[cut]) {
			cut--
		}
		m.Text = m.Text[:cut]
		m.Dropped = append(m.Dropped, fmt.Sprintf("text after %d bytes", lim.Text))
	}
	return m, nil
}

// parseAddresses parses an address list, its encoded words decoded.
func parseAddresses(v string) ([]*mail.Address, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	p := mail.AddressParser{WordDecoder: wordDecoder}
	return p.ParseList(v)
}

var wordDecoder = &mime.WordDecoder{CharsetReader: message.CharsetReader}

// decodeWords decodes RFC 2047 encoded words; what does not decode stays
// as it was.
func decodeWords(v string) string {
	if d, err := wordDecoder.DecodeHeader(v); err == nil {
		return d
	}
	return v
}

var msgIDRe = regexp.MustCompile(`<[^<>\s]{1,250}>`)

// msgID is the first message id in v, or "".
func msgID(v string) string {
	return msgIDRe.FindString(v)
}

// msgIDs are at most n of the message ids in v (the first and the last
// ones of a long References list).
func msgIDs(v string, n int) []string {
	all := msgIDRe.FindAllString(v, 1000)
	if len(all) > n {
		all = append(all[:1], all[len(all)-n+1:]...)
	}
	return all
}

// clean makes a header value safe to show: valid UTF-8, no control
// characters, at most max bytes.
func clean(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0x2028 || r == 0x2029 || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			return ' '
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if len(s) > max {
		for max > 0 && !utf8.RuneStart(s[max]) {
			max--
		}
		s = s[:max] + "…"
	}
	return s
}

// parser walks a message's parts.
type parser struct {
	lim      Limits
	m        *Message
	parts    int
	attached int64
	text     strings.Builder
	html     string
	dropped  map[string]bool
}

func (p *parser) drop(why string) {
	if p.dropped == nil {
		p.dropped = map[string]bool{}
	}
	if !p.dropped[why] {
		p.dropped[why] = true
		p.m.Dropped = append(p.m.Dropped, why)
	}
}

// walk reads entity e at depth.
func (p *parser) walk(e *message.Entity, depth int) {
	defer func() {
		if depth == 0 {
			p.finish()
		}
	}()
	p.parts++
	if p.parts > p.lim.Parts {
		p.drop(fmt.Sprintf("parts after the %dth", p.lim.Parts))
		return
	}
	if mr := e.MultipartReader(); mr != nil {
		if depth >= p.lim.Depth {
			p.drop(fmt.Sprintf("parts nested deeper than %d", p.lim.Depth))
			return
		}
		for {
			part, err := mr.NextPart()
			if err == io.EOF {
				return
			}
			if err != nil {
				if part == nil {
					p.drop("the rest of a malformed multipart body")
					return
				}
			}
			p.walk(part, depth+1)
			if p.parts > p.lim.Parts {
				p.drop(fmt.Sprintf("parts after the %dth", p.lim.Parts))
				return
			}
		}
	}
	ct, params, err := e.Header.ContentType()
	if err != nil || ct == "" {
		ct = "text/plain"
	}
	disp, dparams, _ := e.Header.ContentDisposition()
	name := dparams["filename"]
	if name == "" {
		name = params["name"]
	}
	if disp != "attachment" && name == "" && (ct == "text/plain" || ct == "text/html") {
		b, err := io.ReadAll(io.LimitReader(e.Body, int64(p.lim.Text)*4+1))
		if err != nil && len(b) == 0 {
			p.drop("a text part that does not decode")
			return
		}
		s := strings.ToValidUTF8(string(b), "\uFFFD")
		if ct == "text/html" {
			if p.html == "" {
				p.html = s
			}
			return
		}
		if p.text.Len() > 0 {
			p.text.WriteString("\n\n")
		}
		p.text.WriteString(s)
		return
	}
	if ct == "message/rfc822" && name == "" {
		name = "message.eml"
	}
	if name == "" {
		name = "part"
	}
	a := Attachment{Name: safeName(decodeWords(name), len(p.m.Attach)), Type: clean(ct, 100), Archive: isArchive(ct, name)}
	if len(p.m.Attach) >= p.lim.Attachments {
		p.drop(fmt.Sprintf("attachments after the %dth", p.lim.Attachments))
		return
	}
	b, _ := io.ReadAll(io.LimitReader(e.Body, p.lim.AttachmentSize+1))
	a.Size = int64(len(b))
	switch {
	case a.Size > p.lim.AttachmentSize:
		p.drop(fmt.Sprintf("%s: over %d bytes, not given", a.Name, p.lim.AttachmentSize))
	case p.attached+a.Size > p.lim.AttachmentsTotal:
		p.drop(fmt.Sprintf("%s: attachments over %d bytes together, not given", a.Name, p.lim.AttachmentsTotal))
	default:
		p.attached += a.Size
		a.Data = b
	}
	p.m.Attach = append(p.m.Attach, a)
}

// finish sets the message's text: the text parts, else the first HTML
// part reduced to text.
func (p *parser) finish() {
	p.m.Text = p.text.String()
	if strings.TrimSpace(p.m.Text) == "" && p.html != "" {
		p.m.Text, p.m.HTML = HTMLText(p.html), true
	}
}

var safeNameRe = regexp.MustCompile(`[^A-Za-z0-9._ -]+`)

// safeName makes an attachment's name a plain file name: its base, the
// characters outside letters, digits, dot, dash, underscore and space
// replaced, never hidden, never empty, at most 100 bytes, prefixed by its
// index so two never collide.
func safeName(name string, i int) string {
	name = path.Base(strings.ReplaceAll(strings.ToValidUTF8(name, ""), "\\", "/"))
	name = strings.Trim(safeNameRe.ReplaceAllString(name, "_"), ". ")
	if name == "" {
		name = "part"
	}
	if len(name) > 100 {
		name = name[len(name)-100:]
	}
	return fmt.Sprintf("%02d-%s", i+1, name)
}

// isArchive reports whether an attachment is an archive or compressed
// file (listed as such; the host never unpacks one).
func isArchive(ct, name string) bool {
	n := strings.ToLower(name)
	for _, ext := range []string{".zip", ".gz", ".tgz", ".tar", ".bz2", ".xz", ".7z", ".rar", ".zst", ".jar"} {
		if strings.HasSuffix(n, ext) {
			return true
		}
	}
	switch ct {
	case "application/zip", "application/gzip", "application/x-gzip", "application/x-tar", "application/x-7z-compressed",
		"application/x-rar-compressed", "application/x-bzip2", "application/x-xz", "application/zstd":
		return true
	}
	return false
}

// HTMLText reduces HTML to its text: scripts, styles and comments
// dropped, block elements as line breaks, links as their text only (the
// host follows none).
func HTMLText(s string) string {
	z := html.NewTokenizer(strings.NewReader(s))
	var b strings.Builder
	skip := 0
	for {
		switch z.Next() {
		case html.ErrorToken:
			return strings.TrimSpace(collapse(b.String()))
		case html.StartTagToken, html.SelfClosingTagToken:
			n, _ := z.TagName()
			switch string(n) {
			case "script", "style", "head", "title", "noscript", "template":
				skip++
			case "br", "p", "div", "tr", "li", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre", "table":
				b.WriteString("\n")
			}
		case html.EndTagToken:
			n, _ := z.TagName()
			switch string(n) {
			case "script", "style", "head", "title", "noscript", "template":
				if skip > 0 {
					skip--
				}
			case "p", "div", "tr", "li", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre", "table":
				b.WriteString("\n")
			}
		case html.TextToken:
			if skip == 0 {
				b.Write(z.Text())
			}
		}
	}
}

var blankRe = regexp.MustCompile(`[ \t\r\f\v]+`)
var linesRe = regexp.MustCompile(`\n[ \t]*(\n[ \t]*)+`)

func collapse(s string) string {
	return linesRe.ReplaceAllString(blankRe.ReplaceAllString(s, " "), "\n\n")
}
