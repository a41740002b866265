package config

import (
	"strings"
	"testing"
)

const imapTrigger = `triggers:
  inbox:
    source: imap
    host: imap.example.org
    user: me@example.org
    password: mail-password
    playbook: inbox-triage
    from: [alice@example.org]
`

// TestIMAPTrigger: a mail trigger's keys parse with their defaults, and
// each wrong value is an error naming its key and line.
func TestIMAPTrigger(t *testing.T) {
	c, err := Parse("c.yaml", []byte(imapTrigger))
	if err != nil {
		t.Fatal(err)
	}
	m := c.Triggers["inbox"].IMAP
	if m.Addr() != "imap.example.org:993" || m.TLSMode() != TLSImplicit || m.Mailbox() != "INBOX" || m.SMTPAddr() != "imap.example.org:587" ||
		m.MessageCap() != DefaultMailMaxMessage || m.PollInterval() != DefaultMailPoll {
		t.Errorf("defaults: %s %s %s %s", m.Addr(), m.TLSMode(), m.Mailbox(), m.SMTPAddr())
	}
	bad := map[string]string{
		"    tls: none\n":                     "tls: none sends the password in the clear",
		"    tls: ssl\n":                      `"ssl" is not implicit, starttls or none`,
		"    password: hunter2!\n":            "is not a vault entry name",
		"    from: [not-an-address]\n":        "is not a mail address",
		"    from: []\n":                      "name the senders",
		"    events: [push]\n":                "are webhook keys",
		"    poll: 10ms\n":                    "from 1s to 1h",
		"    max_message: 999999999999\n":     "at most",
		"    trust_auth_results: \"a b\"\n":   "is not a host name",
		"    host: \"imap.example.org;rm\"\n": "is not a host name",
		"    smtp_password: \"Not Valid\"\n":  "is not a vault entry name",
		"    folder: \"INBOX\\\"x\"\n":        "is not a folder name",
		"    dkim_dns: dns.example.org\n":     "is not a DNS server's IP address",
		"    dkim_dns: 127.0.0.1:99999\n":     "is not a DNS server's IP address",
		"    tls_ca: ca.pem\n":                "is not an absolute path",
	}
	for line, want := range bad {
		doc := strings.Replace(imapTrigger, "    from: [alice@example.org]\n", "", 1)
		if !strings.HasPrefix(line, "    from:") {
			doc += "    from: [alice@example.org]\n"
		}
		key := strings.SplitN(strings.TrimSpace(line), ":", 2)[0]
		doc = removeKey(doc, key) + line
		if _, err := Parse("c.yaml", []byte(doc)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v (want %q)", strings.TrimSpace(line), err, want)
		}
	}
	loop := strings.Replace(imapTrigger, "imap.example.org", "127.0.0.1", 1) + "    tls: none\n"
	if _, err := Parse("c.yaml", []byte(loop)); err != nil {
		t.Errorf("tls: none on loopback: %v", err)
	}
	for in, want := range map[string]string{"127.0.0.1": "127.0.0.1:53", "127.0.0.1:5353": "127.0.0.1:5353", "::1": "[::1]:53", "[::1]:5353": "[::1]:5353"} {
		doc := imapTrigger + "    dkim_dns: \"" + in + "\"\n    tls_ca: /etc/ssl/mail-ca.pem\n"
		c, err := Parse("c.yaml", []byte(doc))
		if err != nil {
			t.Errorf("dkim_dns: %s: %v", in, err)
			continue
		}
		if got := c.Triggers["inbox"].DKIMResolver(); got != want {
			t.Errorf("dkim_dns: %s is %s, want %s", in, got, want)
		}
	}
	hook := "triggers:\n  h:\n    source: github\n    secret: s\n    playbook: p\n    events: [issues]\n    from: [a@b.c]\n"
	if _, err := Parse("c.yaml", []byte(hook)); err == nil || !strings.Contains(err.Error(), "belong to a trigger with source: imap") {
		t.Errorf("a mail key on a webhook: %v", err)
	}
}

func removeKey(doc, key string) string {
	var out []string
	for _, l := range strings.Split(doc, "\n") {
		if strings.HasPrefix(l, "    "+key+":") {
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}
