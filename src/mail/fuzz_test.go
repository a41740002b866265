package mail_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hobbs-agent/hobbs/src/mail"
	"github.com/hobbs-agent/hobbs/src/mail/mailtest"
)

// FuzzParse: any bytes parse without a panic, within the caps, and what
// Parse gives is valid UTF-8, every attachment name a plain file name, and
// the sender one lower-case address.
func FuzzParse(f *testing.F) {
	f.Add(mailtest.Message("alice@example.org", "h@test", "hi", "body"))
	f.Add([]byte("From: =?UTF-8?B?w6k=?= <a@b.c>\r\nContent-Type: multipart/mixed; boundary=x\r\n\r\n--x\r\nContent-Disposition: attachment; filename=\"../a\"\r\n\r\nA\r\n--x--\r\n"))
	f.Add([]byte("From: a@b.c\r\nContent-Type: text/html\r\n\r\n<p>x<script>y</script>"))
	lim := mail.DefaultLimits
	lim.Message, lim.AttachmentSize, lim.AttachmentsTotal = 1<<20, 1<<16, 1<<17
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, err := mail.Parse(raw, lim)
		if err != nil {
			return
		}
		b, err := json.Marshal(m)
		if err != nil || !utf8.Valid(b) {
			t.Fatalf("the event does not marshal: %v", err)
		}
		for _, s := range append([]string{m.Subject, m.FromName, m.Text}, m.To...) {
			if !utf8.ValidString(s) {
				t.Fatalf("invalid UTF-8: %q", s)
			}
		}
		if m.From != strings.ToLower(m.From) || strings.ContainsAny(m.From, " \r\n,") {
			t.Fatalf("sender %q", m.From)
		}
		if len(m.Attach) > lim.Attachments || len(m.Text) > lim.Text {
			t.Fatalf("over the caps: %d attachments, %d text", len(m.Attach), len(m.Text))
		}
		for _, a := range m.Attach {
			if strings.ContainsAny(a.Name, "/\\\x00") || strings.HasPrefix(a.Name, ".") || int64(len(a.Data)) > lim.AttachmentSize {
				t.Fatalf("attachment %q (%d bytes)", a.Name, len(a.Data))
			}
		}
	})
}
