// Package mailtest starts the real Dovecot IMAP server for tests: an
// instance of its own on a loopback port, with its own config, base
// directory and log, one test user from a passwd-file, and a Maildir the
// test writes messages into. It also makes DKIM-signed messages with a
// throwaway key, whose DNS record a test serves from a DNS server on
// loopback (StartDNS) or hands to mail.Rules.LookupTXT.
package mailtest

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/tooltest"
)

// Dovecot is one running Dovecot.
type Dovecot struct {
	Addr     string // 127.0.0.1:PORT, plain IMAP (tls: none), or STARTTLS (StartTLS)
	TLSAddr  string // StartTLS: 127.0.0.1:PORT, implicit TLS
	Roots    *x509.CertPool
	CertPEM  []byte // StartTLS: the certificate Roots holds
	User     string
	Password string
	Dir      string
	conf     string
	bin      string
	maildir  string
	uid, gid int
	seq      atomic.Int64
}

// Start starts Dovecot for t, stopped at its end. Without Dovecot it
// skips (fails in CI) naming the Debian package.
func Start(t testing.TB) *Dovecot { return start(t, false) }

// StartTLS starts Dovecot with TLS: STARTTLS on Addr (plain login
// refused before it), implicit TLS on TLSAddr, with a certificate for
// 127.0.0.1 that Roots holds.
func StartTLS(t testing.TB) *Dovecot { return start(t, true) }

func start(t testing.TB, withTLS bool) *Dovecot {
	t.Helper()
	bin, err := exec.LookPath("dovecot")
	if err != nil {
		for _, p := range []string{"/usr/sbin/dovecot", "/sbin/dovecot"} {
			if _, err := os.Stat(p); err == nil {
				bin = p
			}
		}
	}
	if bin == "" {
		tooltest.Skip(t, "dovecot not installed", tooltest.Install("dovecot-imapd"))
	}
	dir, err := os.MkdirTemp("", "hobbs-dovecot-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	d := &Dovecot{User: "hobbs@test.example", Password: "test-password-" + strconv.Itoa(os.Getpid()), Dir: dir,
		uid: os.Getuid(), gid: os.Getgid()}
	login, internal := "", ""
	if d.uid == 0 {
		// Dovecot refuses mail access as root: the mail is nobody's.
		d.uid, d.gid = 65534, 65534
		login, internal = "dovenull", "dovecot"
	} else {
		u, _ := user.Current()
		login, internal = u.Username, u.Username
	}
	d.bin = bin
	d.maildir = filepath.Join(dir, "mail", d.User)
	for _, sub := range []string{"new", "cur", "tmp"} {
		if err := os.MkdirAll(filepath.Join(d.maildir, sub), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	port := freePort(t)
	d.Addr = fmt.Sprintf("127.0.0.1:%d", port)
	tlsConf := "ssl = no\ndisable_plaintext_auth = no\n"
	imaps := "port = 0"
	if withTLS {
		certPEM, keyPEM, roots := selfSigned(t)
		d.Roots, d.CertPEM = roots, certPEM
		if err := os.WriteFile(filepath.Join(dir, "cert.pem"), certPEM, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "key.pem"), keyPEM, 0o600); err != nil {
			t.Fatal(err)
		}
		tport := freePort(t)
		d.TLSAddr = fmt.Sprintf("127.0.0.1:%d", tport)
		tlsConf = fmt.Sprintf("ssl = required\nssl_cert = <%[1]s/cert.pem\nssl_key = <%[1]s/key.pem\ndisable_plaintext_auth = yes\n", dir)
		imaps = fmt.Sprintf("address = 127.0.0.1\n    port = %d", tport)
	}
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("passwd", fmt.Sprintf("%s:{PLAIN}%s:%d:%d::%s/home::\n", d.User, d.Password, d.uid, d.gid, dir))
	d.conf = filepath.Join(dir, "dovecot.conf")
	write("dovecot.conf", fmt.Sprintf(`base_dir = %[1]s/run
state_dir = %[1]s/state
log_path = %[1]s/dovecot.log
info_log_path = %[1]s/dovecot.log
protocols = imap
listen = 127.0.0.1
%[5]sauth_mechanisms = plain login
default_login_user = %[3]s
default_internal_user = %[4]s
first_valid_uid = 1
mail_location = maildir:%[1]s/mail/%%u
mail_fsync = always
passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%%u %[1]s/passwd
}
userdb {
  driver = passwd-file
  args = username_format=%%u %[1]s/passwd
}
service imap-login {
  inet_listener imap {
    address = 127.0.0.1
    port = %[2]d
  }
  inet_listener imaps {
    %[6]s
  }
}
service anvil {
  chroot =
}
service imap-login {
  chroot =
}
service stats {
  unix_listener stats-writer {
    mode = 0666
  }
}
`, dir, port, login, internal, tlsConf, imaps))
	if os.Getuid() == 0 {
		for _, p := range []string{filepath.Join(dir, "mail"), d.maildir, filepath.Join(d.maildir, "new"), filepath.Join(d.maildir, "cur"), filepath.Join(d.maildir, "tmp")} {
			if err := os.Chown(p, d.uid, d.gid); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Dovecot forks its master away: its output goes to a file, never to a
	// pipe the child would hold open.
	outf, err := os.Create(filepath.Join(dir, "start.out"))
	if err != nil {
		t.Fatal(err)
	}
	start := exec.Command(bin, "-c", d.conf)
	start.Stdout, start.Stderr = outf, outf
	err = start.Run()
	outf.Close()
	if err != nil {
		out, _ := os.ReadFile(filepath.Join(dir, "start.out"))
		log, _ := os.ReadFile(filepath.Join(dir, "dovecot.log"))
		t.Fatalf("start dovecot: %v\n%s\n%s", err, out, log)
	}
	t.Cleanup(func() {
		_ = exec.Command(bin, "-c", d.conf, "stop").Run()
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if _, err := os.Stat(filepath.Join(dir, "run", "master.pid")); os.IsNotExist(err) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(dir, "dovecot.log"))
			t.Logf("dovecot.log:\n%s", tail(string(log), 4000))
		}
		os.RemoveAll(dir)
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", d.Addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "dovecot.log"))
			t.Fatalf("dovecot does not listen on %s: %v\n%s", d.Addr, err, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return d
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func freePort(t testing.TB) int {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Deliver puts raw into the user's Maildir as a new message, as a local
// delivery agent does: written in tmp/, then renamed into new/.
func (d *Dovecot) Deliver(t testing.TB, raw []byte) {
	t.Helper()
	name := fmt.Sprintf("%d.M%dP%d.hobbs-test", time.Now().Unix(), d.seq.Add(1), os.Getpid())
	tmp := filepath.Join(d.maildir, "tmp", name)
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if os.Getuid() == 0 {
		if err := os.Chown(tmp, d.uid, d.gid); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Rename(tmp, filepath.Join(d.maildir, "new", name)); err != nil {
		t.Fatal(err)
	}
}

// Kick drops every IMAP connection of the user, as a server going away
// does.
func (d *Dovecot) Kick(t testing.TB) {
	t.Helper()
	if out, err := exec.Command("doveadm", "-c", d.conf, "kick", d.User).CombinedOutput(); err != nil {
		t.Fatalf("doveadm kick: %v %s", err, out)
	}
}

// Recreate removes the Maildir's index so Dovecot gives the folder a new
// UIDVALIDITY, as a mailbox rebuilt on the server does.
func (d *Dovecot) Recreate(t testing.TB) {
	t.Helper()
	for _, n := range []string{"dovecot-uidlist", "dovecot.index", "dovecot.index.log", "dovecot.index.cache"} {
		_ = os.Remove(filepath.Join(d.maildir, n))
	}
}

// Unseen counts the messages not marked \Seen (Maildir's S flag).
func (d *Dovecot) Unseen(t testing.TB) int {
	n := 0
	for _, sub := range []string{"new", "cur"} {
		es, err := os.ReadDir(filepath.Join(d.maildir, sub))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			_, flags, _ := strings.Cut(e.Name(), ":2,")
			if !strings.Contains(flags, "S") {
				n++
			}
		}
	}
	return n
}

// Key is a throwaway DKIM key of a domain, selector "test".
type Key struct {
	Domain string
	Priv   ed25519.PrivateKey
}

// NewKey makes a key for domain.
func NewKey(domain string) Key {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	return Key{Domain: domain, Priv: priv}
}

// Record is the key's DNS TXT record, at test._domainkey.DOMAIN.
func (k Key) Record() string {
	return "v=DKIM1; k=ed25519; p=" + base64.StdEncoding.EncodeToString(k.Priv.Public().(ed25519.PublicKey))
}

// DNS answers DKIM key look-ups for keys: mail.Rules.LookupTXT.
func DNS(keys ...Key) func(string) ([]string, error) {
	return func(name string) ([]string, error) {
		for _, k := range keys {
			if strings.EqualFold(name, "test._domainkey."+k.Domain) {
				return []string{k.Record()}, nil
			}
		}
		return nil, &net.DNSError{Err: "no such host", Name: name, IsNotFound: true}
	}
}

// Log is Dovecot's log so far.
func (d *Dovecot) Log(t testing.TB) string {
	b, err := os.ReadFile(filepath.Join(d.Dir, "dovecot.log"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Stop stops Dovecot, as a server going away does; Restart starts it again
// on the same port.
func (d *Dovecot) Stop(t testing.TB) {
	t.Helper()
	if out, err := exec.Command(d.bin, "-c", d.conf, "stop").CombinedOutput(); err != nil {
		t.Fatalf("dovecot stop: %v %s", err, out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", d.Addr, time.Second)
		if err != nil {
			return
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatalf("dovecot still listens on %s", d.Addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Restart starts a stopped Dovecot again.
func (d *Dovecot) Restart(t testing.TB) {
	t.Helper()
	start := exec.Command(d.bin, "-c", d.conf)
	if err := start.Run(); err != nil {
		t.Fatalf("dovecot restart: %v", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", d.Addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("dovecot does not listen again on %s: %v", d.Addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
