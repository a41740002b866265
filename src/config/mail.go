package config

import (
	"net"
	"net/mail"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// IMAP is the keys of a trigger with source: imap: the mailbox hobbs serve
// watches (package mail), the senders whose mail may start a run, and
// where the runs' replies are submitted. Password and SMTPPassword are
// vault entries, never the passwords themselves.
type IMAP struct {
	Host string `yaml:"host,omitempty" json:"host,omitempty"`
	Port int    `yaml:"port,omitempty" json:"port,omitempty"` // 0: 993 (implicit), 143 (starttls, none)
	// TLS is how the connection is protected: TLSImplicit (the default),
	// TLSStartTLS, or TLSNone (a loopback host only).
	TLS      string `yaml:"tls,omitempty" json:"tls,omitempty"`
	User     string `yaml:"user,omitempty" json:"user,omitempty"`
	Password string `yaml:"password,omitempty" json:"password,omitempty"` // vault entry
	Folder   string `yaml:"folder,omitempty" json:"folder,omitempty"`     // "": INBOX
	// From are the sender addresses whose mail may start a run; a
	// message from anyone else, or whose sender's domain did not sign it,
	// is left unread.
	From []string `yaml:"from,omitempty" json:"from,omitempty"`
	// TrustAuthResults names the receiving server (the authserv-id of its
	// Authentication-Results header) whose DKIM or DMARC verdict is taken
	// instead of hobbs's own DKIM check.
	TrustAuthResults string `yaml:"trust_auth_results,omitempty" json:"trust_auth_results,omitempty"`
	// DKIMDNS is the DNS server (IP or IP:PORT, port 53 by default) the
	// senders' DKIM keys are looked up at ("": the system's resolver).
	DKIMDNS string `yaml:"dkim_dns,omitempty" json:"dkim_dns,omitempty"`
	// TLSCA is a PEM file of the certificates trusted for the IMAP and
	// SMTP servers instead of the system's roots (a server of your own
	// with a private CA or a self-signed certificate); "~/" is the home.
	TLSCA string `yaml:"tls_ca,omitempty" json:"tls_ca,omitempty"`
	// Poll is how often a server without IDLE is asked for new mail ("":
	// DefaultMailPoll).
	Poll string `yaml:"poll,omitempty" json:"poll,omitempty"`
	// MaxMessage is the largest message read, in bytes (0:
	// DefaultMailMaxMessage); larger ones are left unread.
	MaxMessage int64 `yaml:"max_message,omitempty" json:"max_message,omitempty"`
	// Reply: the run's report goes back to the sender as a threaded reply,
	// submitted to SMTPHost:SMTPPort (STARTTLS, or implicit TLS on 465;
	// none on a loopback host) as SMTPUser (User when empty) with the
	// password in the vault entry SMTPPassword (Password when empty).
	Reply        bool   `yaml:"reply,omitempty" json:"reply,omitempty"`
	SMTPHost     string `yaml:"smtp_host,omitempty" json:"smtp_host,omitempty"` // "": Host
	SMTPPort     int    `yaml:"smtp_port,omitempty" json:"smtp_port,omitempty"` // 0: 587
	SMTPUser     string `yaml:"smtp_user,omitempty" json:"smtp_user,omitempty"`
	SMTPPassword string `yaml:"smtp_password,omitempty" json:"smtp_password,omitempty"`
}

// The mail TLS modes.
const (
	TLSImplicit = "implicit"
	TLSStartTLS = "starttls"
	TLSNone     = "none"
)

// Mail defaults and bounds.
const (
	DefaultMailPoll       = time.Minute
	DefaultMailMaxMessage = 10 << 20
	MaxMailMaxMessage     = 64 << 20
	DefaultSMTPPort       = 587
)

// set reports whether any mail key is set.
func (m IMAP) set() bool {
	return m.Host != "" || m.Port != 0 || m.TLS != "" || m.User != "" || m.Password != "" || m.Folder != "" ||
		len(m.From) != 0 || m.TrustAuthResults != "" || m.DKIMDNS != "" || m.TLSCA != "" || m.Poll != "" || m.MaxMessage != 0 || m.Reply ||
		m.SMTPHost != "" || m.SMTPPort != 0 || m.SMTPUser != "" || m.SMTPPassword != ""
}

// TLSMode is TLS with its default.
func (m IMAP) TLSMode() string {
	if m.TLS == "" {
		return TLSImplicit
	}
	return m.TLS
}

// Addr is the IMAP server's HOST:PORT.
func (m IMAP) Addr() string {
	p := m.Port
	if p == 0 {
		p = 993
		if m.TLSMode() != TLSImplicit {
			p = 143
		}
	}
	return net.JoinHostPort(m.Host, strconv.Itoa(p))
}

// SMTPAddr is the submission server's HOST:PORT.
func (m IMAP) SMTPAddr() string {
	h, p := m.SMTPHost, m.SMTPPort
	if h == "" {
		h = m.Host
	}
	if p == 0 {
		p = DefaultSMTPPort
	}
	return net.JoinHostPort(h, strconv.Itoa(p))
}

// DKIMResolver is DKIMDNS as HOST:PORT ("": the system's resolver).
func (m IMAP) DKIMResolver() string {
	if m.DKIMDNS == "" {
		return ""
	}
	if ip := net.ParseIP(strings.Trim(m.DKIMDNS, "[]")); ip != nil {
		return net.JoinHostPort(ip.String(), "53")
	}
	return m.DKIMDNS
}

// validDNS reports whether s is an IP address, with or without a port.
func validDNS(s string) bool {
	if net.ParseIP(strings.Trim(s, "[]")) != nil {
		return true
	}
	h, p, err := net.SplitHostPort(s)
	n, perr := strconv.Atoi(p)
	return err == nil && net.ParseIP(h) != nil && perr == nil && n > 0 && n < 65536
}

// Mailbox is Folder with its default.
func (m IMAP) Mailbox() string {
	if m.Folder == "" {
		return "INBOX"
	}
	return m.Folder
}

// PollInterval is Poll as a duration.
func (m IMAP) PollInterval() time.Duration {
	if d, err := time.ParseDuration(m.Poll); err == nil && d > 0 {
		return d
	}
	return DefaultMailPoll
}

// MessageCap is MaxMessage with its default.
func (m IMAP) MessageCap() int64 {
	if m.MaxMessage <= 0 {
		return DefaultMailMaxMessage
	}
	return m.MaxMessage
}

// Loopback reports whether host is a loopback address or localhost.
func Loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

var (
	mailHostRe   = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]{0,252}[A-Za-z0-9])?$|^\[?[0-9a-fA-F:.]+\]?$`)
	mailFolderRe = regexp.MustCompile(`^[^\x00-\x1f\x7f*%"\\]{1,200}$`)
	authservRe   = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]{0,252}[A-Za-z0-9])?$`)
)

// validateIMAP checks a trigger with source: imap.
func validateIMAP(t Trigger, at func(k string) []string, bad func(keys []string, format string, args ...any)) {
	m := t.IMAP
	switch {
	case !mailHostRe.MatchString(m.Host):
		bad(at("host"), "%q is not a host name, e.g. imap.example.org", m.Host)
	case m.Port < 0 || m.Port > 65535:
		bad(at("port"), "%d: the port must be 1 to 65535", m.Port)
	case m.TLS != "" && m.TLS != TLSImplicit && m.TLS != TLSStartTLS && m.TLS != TLSNone:
		bad(at("tls"), "%q is not implicit, starttls or none", m.TLS)
	case m.TLSMode() == TLSNone && !Loopback(m.Host):
		bad(at("tls"), "none sends the password in the clear: only for a loopback host (127.0.0.1); use implicit or starttls")
	case m.User == "":
		bad(at("user"), "name the mailbox's login, e.g. me@example.org")
	case !vaultEntryRe.MatchString(m.Password):
		bad(at("password"), "%q is not a vault entry name (the entry holding the mailbox's password or app password)", m.Password)
	case m.Folder != "" && !mailFolderRe.MatchString(m.Folder):
		bad(at("folder"), "%q is not a folder name", m.Folder)
	case !playbookRe.MatchString(t.Playbook):
		bad(at("playbook"), "%q is not a playbook name (kebab-case, as in playbooks/NAME.md)", t.Playbook)
	case len(m.From) == 0:
		bad(at("from"), "name the senders whose mail may start a run, e.g. from: [alice@example.org]")
	case len(t.Events) != 0 || t.Secret != "" || t.IgnoreBots != nil:
		bad(at("source"), "events, secret and ignore_bots are webhook keys: a mail trigger has from, user and password")
	case m.TrustAuthResults != "" && !authservRe.MatchString(m.TrustAuthResults):
		bad(at("trust_auth_results"), "%q is not a host name (the receiving server's Authentication-Results authserv-id)", m.TrustAuthResults)
	case m.DKIMDNS != "" && !validDNS(m.DKIMDNS):
		bad(at("dkim_dns"), "%q is not a DNS server's IP address, e.g. 127.0.0.1 or 127.0.0.1:5353", m.DKIMDNS)
	case m.TLSCA != "" && !filepath.IsAbs(m.TLSCA) && !strings.HasPrefix(m.TLSCA, "~/"):
		bad(at("tls_ca"), "%q is not an absolute path (a PEM file, e.g. /etc/ssl/my-mail-ca.pem)", m.TLSCA)
	case m.MaxMessage < 0 || m.MaxMessage > MaxMailMaxMessage:
		bad(at("max_message"), "%d: at most %d bytes", m.MaxMessage, MaxMailMaxMessage)
	case m.SMTPHost != "" && !mailHostRe.MatchString(m.SMTPHost):
		bad(at("smtp_host"), "%q is not a host name, e.g. smtp.example.org", m.SMTPHost)
	case m.SMTPPort < 0 || m.SMTPPort > 65535:
		bad(at("smtp_port"), "%d: the port must be 1 to 65535", m.SMTPPort)
	case m.SMTPPassword != "" && !vaultEntryRe.MatchString(m.SMTPPassword):
		bad(at("smtp_password"), "%q is not a vault entry name", m.SMTPPassword)
	}
	for _, f := range m.From {
		if a, err := mail.ParseAddress(f); err != nil || a.Address != f || !strings.Contains(f, "@") {
			bad(at("from"), "%q is not a mail address, e.g. alice@example.org", f)
		}
	}
	if m.Poll != "" {
		if d, err := time.ParseDuration(m.Poll); err != nil || d < time.Second || d > time.Hour {
			bad(at("poll"), "%q is not a duration from 1s to 1h, e.g. 1m", m.Poll)
		}
	}
	if t.Debounce != "" {
		if d, err := time.ParseDuration(t.Debounce); err != nil || d < 0 || d > MaxDebounce {
			bad(at("debounce"), "%q is not a duration from 0 to 1h, e.g. 10s", t.Debounce)
		}
	}
}
