package mail_test

import (
	"archive/zip"
	"bytes"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/mail"
	"github.com/hobbs-agent/hobbs/src/mail/mailtest"
)

func multipart(boundary string, parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString("--" + boundary + "\r\n" + p + "\r\n")
	}
	b.WriteString("--" + boundary + "--\r\n")
	return b.String()
}

func parse(t *testing.T, raw []byte) (*mail.Message, time.Duration) {
	t.Helper()
	start := time.Now()
	m, err := mail.Parse(raw, mail.DefaultLimits)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return m, time.Since(start)
}

func dropped(m *mail.Message, word string) bool {
	return strings.Contains(strings.Join(m.Dropped, "\n"), word)
}

// TestParseTooLarge: a 50 MiB message is refused whole, before parsing.
func TestParseTooLarge(t *testing.T) {
	raw := mailtest.Message("alice@example.org", "h@test", "big", strings.Repeat("x", 50<<20))
	if _, err := mail.Parse(raw, mail.DefaultLimits); err != mail.ErrTooLarge {
		t.Fatalf("50 MiB: %v", err)
	}
}

// TestParseMalformed: a header that does not parse, no or two From
// headers, and a multipart body cut off or without its boundary are
// errors or yield what was read, never a panic.
func TestParseMalformed(t *testing.T) {
	for name, raw := range map[string]string{
		"no header end":  "From: alice@example.org\r\nSubject: x",
		"no From":        "Subject: x\r\n\r\nbody",
		"two From":       "From: alice@example.org\r\nFrom: mallory@attacker.example\r\n\r\nbody",
		"two addresses":  "From: alice@example.org, mallory@attacker.example\r\n\r\nbody",
		"garbage header": "\x00\x01\x02: \xff\r\n\r\n",
	} {
		if _, err := mail.Parse([]byte(raw), mail.DefaultLimits); err == nil && name != "no header end" {
			t.Errorf("%s: parsed", name)
		}
	}
	cut := mailtest.Message("alice@example.org", "h@test", "cut", "--b\r\nContent-Type: text/plain\r\n\r\nfirst part\r\n--b\r\nContent-Type: text/pl",
		"MIME-Version: 1.0", `Content-Type: multipart/mixed; boundary="b"`)
	m, _ := parse(t, cut)
	if !strings.Contains(m.Text, "first part") {
		t.Errorf("cut multipart: text %q dropped %q", m.Text, m.Dropped)
	}
	nob := mailtest.Message("alice@example.org", "h@test", "no boundary", "just text", "MIME-Version: 1.0", `Content-Type: multipart/mixed`)
	parse(t, nob)
	badb64 := mailtest.Message("alice@example.org", "h@test", "b64", "!!!not base64!!!", "MIME-Version: 1.0", "Content-Type: text/plain", "Content-Transfer-Encoding: base64")
	parse(t, badb64)
}

// TestParseDeep: a part nested 1,000 deep is read to the depth cap and the
// rest dropped, quickly.
func TestParseDeep(t *testing.T) {
	body := "Content-Type: text/plain\r\n\r\ndeepest\r\n"
	for i := 999; i >= 0; i-- {
		body = fmt.Sprintf("Content-Type: multipart/mixed; boundary=\"b%d\"\r\n\r\n", i) + multipart(fmt.Sprintf("b%d", i), body)
	}
	head, rest, _ := strings.Cut(body, "\r\n\r\n")
	raw := mailtest.Message("alice@example.org", "h@test", "deep", rest, "MIME-Version: 1.0", head)
	m, took := parse(t, raw)
	if !dropped(m, "nested deeper than") || strings.Contains(m.Text, "deepest") || took > 5*time.Second {
		t.Errorf("1,000 deep: text %q dropped %q in %v", m.Text, m.Dropped, took)
	}
}

// TestParseManyParts: 10,000 parts are read to the part cap.
func TestParseManyParts(t *testing.T) {
	parts := make([]string, 10000)
	for i := range parts {
		parts[i] = fmt.Sprintf("Content-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=f%d.bin\r\n\r\nx", i)
	}
	raw := mailtest.Message("alice@example.org", "h@test", "many", multipart("b", parts...), "MIME-Version: 1.0", `Content-Type: multipart/mixed; boundary="b"`)
	m, took := parse(t, raw)
	if len(m.Attach) > mail.DefaultLimits.Attachments || !dropped(m, "after the") || took > 5*time.Second {
		t.Errorf("10,000 parts: %d attachments, dropped %q, in %v", len(m.Attach), m.Dropped, took)
	}
}

// TestParseHeaders: encoded words decode, non-UTF-8 bytes become U+FFFD,
// control and bidi characters are blanked, and an attachment's name
// cannot name a path.
func TestParseHeaders(t *testing.T) {
	raw := []byte("From: =?ISO-8859-1?Q?Andr=E9?= <Alice@Example.org>\r\nTo: h@test\r\n" +
		"Subject: =?UTF-8?B?" + base64.StdEncoding.EncodeToString([]byte("Rechnung für März")) + "?= \xff\xfe raw\x1b[31m \u202eevil\r\n" +
		"Message-ID: <m1@example.org>\r\nReferences: <r1@example.org> <r2@example.org>\r\nMIME-Version: 1.0\r\n" +
		"Content-Type: multipart/mixed; boundary=b\r\n\r\n" +
		multipart("b", "Content-Type: text/plain; charset=iso-8859-1\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\nGr=FC=DFe",
			"Content-Type: application/pdf\r\nContent-Disposition: attachment; filename=\"=?UTF-8?Q?..=2F..=2Fetc=2Fpasswd?=\"\r\n\r\n%PDF"))
	m, _ := parse(t, raw)
	if m.From != "alice@example.org" || m.FromName != "André" {
		t.Errorf("from %q %q", m.From, m.FromName)
	}
	if !strings.HasPrefix(m.Subject, "Rechnung für März") || !strings.Contains(m.Subject, "\uFFFD") || strings.ContainsAny(m.Subject, "\x1b\u202e") {
		t.Errorf("subject %q", m.Subject)
	}
	if m.Text != "Grüße" {
		t.Errorf("text %q", m.Text)
	}
	if len(m.Attach) != 1 || m.Attach[0].Name != "01-passwd" {
		t.Errorf("attachments %+v", m.Attach)
	}
	if m.Thread() != "<r1@example.org>" {
		t.Errorf("thread %q", m.Thread())
	}
}

// TestParseHTML: an HTML-only message's text is its text, without
// scripts, styles or link targets.
func TestParseHTML(t *testing.T) {
	raw := mailtest.Message("alice@example.org", "h@test", "html", `<html><head><style>p{}</style></head><body><p>Hello <a href="https://evil.example/x">click</a></p><script>steal()</script><div>Bye</div></body></html>`,
		"MIME-Version: 1.0", "Content-Type: text/html; charset=utf-8")
	m, _ := parse(t, raw)
	if !m.HTML || m.Text != "Hello click\n\nBye" {
		t.Errorf("text %q", m.Text)
	}
}

// TestParseZipBomb: a zip whose member unpacks to 256 MiB is listed as an
// archive, given as it came (a few KiB), never unpacked; one over the
// attachment cap is listed and not given.
func TestParseZipBomb(t *testing.T) {
	var zb bytes.Buffer
	zw := zip.NewWriter(&zb)
	f, _ := zw.Create("bomb.bin")
	chunk := make([]byte, 1<<20)
	for i := 0; i < 256; i++ {
		f.Write(chunk)
	}
	zw.Close()
	big := bytes.Repeat([]byte("A"), int(mail.DefaultLimits.AttachmentSize)+10)
	raw := mailtest.Message("alice@example.org", "h@test", "zip", multipart("b",
		"Content-Type: text/plain\r\n\r\nsee attached",
		"Content-Type: application/zip\r\nContent-Disposition: attachment; filename=bomb.zip\r\nContent-Transfer-Encoding: base64\r\n\r\n"+base64.StdEncoding.EncodeToString(zb.Bytes()),
		"Content-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=big.bin\r\nContent-Transfer-Encoding: base64\r\n\r\n"+base64.StdEncoding.EncodeToString(big)),
		"MIME-Version: 1.0", `Content-Type: multipart/mixed; boundary="b"`)
	m, _ := parse(t, raw)
	if len(m.Attach) != 2 {
		t.Fatalf("attachments %+v", m.Attach)
	}
	z := m.Attach[0]
	if !z.Archive || z.Size != int64(zb.Len()) || !bytes.Equal(z.Data, zb.Bytes()) {
		t.Errorf("the zip: archive %v size %d (sent %d)", z.Archive, z.Size, zb.Len())
	}
	if m.Attach[1].Data != nil || !dropped(m, "big.bin: over") {
		t.Errorf("over the cap: %d bytes given, dropped %q", len(m.Attach[1].Data), m.Dropped)
	}
}

// TestCheck: only a listed sender whose own domain's DKIM signature over
// From verifies passes; a forged From, another domain's valid signature,
// a tampered body and an unlisted sender do not. A trusted server's
// topmost Authentication-Results is taken; one the sender wrote below it
// is not.
func TestCheck(t *testing.T) {
	key, other := mailtest.NewKey("example.org"), mailtest.NewKey("attacker.example")
	r := mail.Rules{From: []string{"alice@example.org"}, LookupTXT: mailtest.DNS(key, other)}
	good := key.Sign(mailtest.Message("alice@example.org", "h@test", "hi", "body"))
	cases := []struct {
		name   string
		raw    []byte
		sender string
		ok     bool
		why    string
	}{
		{"signed by the sender's domain", good, "alice@example.org", true, "dkim=pass d=example.org"},
		{"forged From, no signature", mailtest.Message("alice@example.org", "h@test", "hi", "body"), "alice@example.org", false, "no DKIM signature"},
		{"another domain's valid signature", other.Sign(mailtest.Message("alice@example.org", "h@test", "hi", "body")), "alice@example.org", false, "DKIM signed by attacker.example"},
		{"tampered body", bytes.Replace(good, []byte("body"), []byte("evil"), 1), "alice@example.org", false, "does not verify"},
		{"unlisted sender", key.Sign(mailtest.Message("mallory@example.org", "h@test", "hi", "body")), "mallory@example.org", false, "not listed"},
	}
	for _, c := range cases {
		ok, why := mail.Check(c.raw, c.sender, r)
		if ok != c.ok || !strings.Contains(why, c.why) {
			t.Errorf("%s: %v %q", c.name, ok, why)
		}
	}
	r.TrustAuthResults = "mx.example.net"
	plain := mailtest.Message("alice@example.org", "h@test", "hi", "body")
	trusted := append([]byte("Authentication-Results: mx.example.net; dkim=pass header.d=example.org\r\n"), plain...)
	if ok, why := mail.Check(trusted, "alice@example.org", r); !ok {
		t.Errorf("trusted server's verdict: %q", why)
	}
	planted := append([]byte("Authentication-Results: mx.example.net; dkim=none\r\n"), bytes.Replace(plain, []byte("Subject:"), []byte("Authentication-Results: mx.example.net; dkim=pass header.d=example.org\r\nSubject:"), 1)...)
	if ok, _ := mail.Check(planted, "alice@example.org", r); ok {
		t.Errorf("a planted Authentication-Results below the server's was taken")
	}
	if ok, _ := mail.Check(append([]byte("Authentication-Results: other.example; dkim=pass header.d=example.org\r\n"), plain...), "alice@example.org", r); ok {
		t.Errorf("another server's verdict was taken")
	}
}
