package vault

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"filippo.io/age"
	"filippo.io/age/armor"
)

// ScryptWorkFactor is the scrypt cost (log2 N) hobbs protects identities
// with: age's default.
const ScryptWorkFactor = 18

// scryptWorkFactor is the cost protect uses: ScryptWorkFactor, except in a
// test binary that lowered it (SetTestScryptWorkFactor).
var scryptWorkFactor = ScryptWorkFactor

// SetTestScryptWorkFactor sets the scrypt cost of the identities this
// process protects from now on, so that tests of passphrase-protected vaults
// run fast. It panics outside a test binary (testing.Testing): hobbs itself
// always uses ScryptWorkFactor, and no flag or variable changes that.
func SetTestScryptWorkFactor(logN int) {
	if !testing.Testing() {
		panic("vault: SetTestScryptWorkFactor called outside a test binary")
	}
	scryptWorkFactor = logN
}

// maxKeyFile bounds what is read from a key file.
const maxKeyFile = 64 << 10

// formatIdentity renders id in age-keygen's layout.
func formatIdentity(id *age.X25519Identity, created time.Time) []byte {
	return []byte(fmt.Sprintf("# created: %s\n# public key: %s\n%s\n",
		created.UTC().Format(time.RFC3339), id.Recipient(), id))
}

// isProtected reports whether an identity file's content is an age-encrypted
// (passphrase-protected) file rather than plain key lines.
func isProtected(data []byte) bool {
	t := bytes.TrimLeft(data, " \t\r\n")
	return bytes.HasPrefix(t, []byte(armor.Header)) || bytes.HasPrefix(t, []byte("age-encryption.org/"))
}

// protect encrypts an identity file's plaintext with a passphrase (scrypt),
// armored so the file stays text. The age CLI reads it with -i and asks for
// the passphrase.
func protect(plain, pass []byte) ([]byte, error) {
	r, err := age.NewScryptRecipient(string(pass))
	if err != nil {
		return nil, err
	}
	r.SetWorkFactor(scryptWorkFactor)
	var buf bytes.Buffer
	aw := armor.NewWriter(&buf)
	w, err := age.Encrypt(aw, r)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(plain); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	if err := aw.Close(); err != nil {
		return nil, err
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// errWrongPassphrase is returned by unprotect for a passphrase that does not
// open the file.
var errWrongPassphrase = fmt.Errorf("wrong passphrase")

// unprotect decrypts a passphrase-protected identity file.
func unprotect(data, pass []byte) ([]byte, error) {
	id, err := age.NewScryptIdentity(string(pass))
	if err != nil {
		return nil, err
	}
	var src io.Reader = bytes.NewReader(data)
	if bytes.HasPrefix(bytes.TrimLeft(data, " \t\r\n"), []byte(armor.Header)) {
		src = armor.NewReader(bytes.NewReader(bytes.TrimLeft(data, " \t\r\n")))
	}
	r, err := age.Decrypt(src, id)
	if err != nil {
		if _, ok := err.(*age.NoIdentityMatchError); ok {
			return nil, errWrongPassphrase
		}
		return nil, err
	}
	out, err := io.ReadAll(io.LimitReader(r, maxKeyFile+1))
	if err != nil {
		return nil, err
	}
	if len(out) > maxKeyFile {
		return nil, fmt.Errorf("too large")
	}
	return out, nil
}

// parseIdentity parses the plaintext of an identity file: exactly one X25519
// secret key, "#" comments and blank lines allowed. Errors never quote the
// file's lines (they may hold key material).
func parseIdentity(plain []byte) (*age.X25519Identity, error) {
	var found *age.X25519Identity
	sc := bufio.NewScanner(bytes.NewReader(plain))
	sc.Buffer(make([]byte, 0, 4096), maxKeyFile)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !utf8.ValidString(line) {
			return nil, fmt.Errorf("line %d: not valid UTF-8", n)
		}
		if !strings.HasPrefix(line, "AGE-SECRET-KEY-1") {
			return nil, fmt.Errorf("line %d: not an age X25519 secret key (AGE-SECRET-KEY-1…)", n)
		}
		id, err := age.ParseX25519Identity(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: malformed secret key", n)
		}
		if found != nil {
			return nil, fmt.Errorf("line %d: more than one secret key", n)
		}
		found = id
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if found == nil {
		return nil, fmt.Errorf("no secret key found")
	}
	return found, nil
}

// Recipient is one line of recipients.txt: a public key and its label.
type Recipient struct {
	Key   string `json:"key"`
	Label string `json:"label,omitempty"`
}

// String is the recipient as hobbs vault recipients list prints it: the
// key, then "  # label" when it has one.
func (r Recipient) String() string {
	if r.Label == "" {
		return r.Key
	}
	return r.Key + "  # " + r.Label
}

// RecipientsHeader opens every recipients.txt Hobbs writes. It is separated
// from the first key by a blank line, so it is not that key's label.
const recipientsHeader = `# Public keys every vault entry is encrypted to, one per line. A "#" line
# directly above a key is its label. Managed by: hobbs vault recipients add|rm.
# Works with the age CLI: age -R recipients.txt
`

// ParseRecipients parses a recipients file: blank lines, "#" comments and age
// X25519 public keys (age1…), one per line. A comment directly above a key is
// its label. A duplicate key is kept once. Errors name the line and the
// reason and never quote the line (a secret key pasted by mistake must not be
// echoed).
func ParseRecipients(data []byte) ([]Recipient, error) {
	if len(data) > maxKeyFile {
		return nil, fmt.Errorf("file too large (over %d bytes)", maxKeyFile)
	}
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("not valid UTF-8")
	}
	var out []Recipient
	seen := map[string]bool{}
	label := ""
	for n, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "":
			label = ""
		case strings.HasPrefix(line, "#"):
			label = strings.TrimSpace(strings.TrimPrefix(line, "#"))
		default:
			if err := CheckRecipient(line); err != nil {
				return nil, &LineError{Line: n + 1, Err: err}
			}
			if !seen[line] {
				seen[line] = true
				out = append(out, Recipient{Key: line, Label: cleanLabel(label)})
			}
			label = ""
		}
	}
	return out, nil
}

// LineError is a problem on one line of a key file.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// CheckRecipient validates one public key as given by the user.
func CheckRecipient(key string) error {
	switch {
	case strings.HasPrefix(key, "AGE-SECRET-KEY"):
		return fmt.Errorf("this is a secret key, not a public key (age1…); keep it out of recipients")
	case strings.HasPrefix(key, "age1pq1"):
		return fmt.Errorf("post-quantum recipients cannot be mixed with the vault's X25519 identity")
	case !strings.HasPrefix(key, "age1"):
		return fmt.Errorf("not an age public key (age1…)")
	}
	r, err := age.ParseX25519Recipient(key)
	if err != nil {
		return fmt.Errorf("malformed age public key")
	}
	if r.String() != key {
		return fmt.Errorf("not in canonical form (lower case age1…)")
	}
	return nil
}

// cleanLabel keeps a label on one printable line.
func cleanLabel(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) > 200 {
		s = string([]rune(s)[:200])
	}
	return s
}

// FormatRecipients renders rs as recipients.txt.
func FormatRecipients(rs []Recipient) []byte {
	var b strings.Builder
	b.WriteString(recipientsHeader)
	for _, r := range rs {
		b.WriteString("\n")
		if l := cleanLabel(r.Label); l != "" {
			b.WriteString("# " + l + "\n")
		}
		b.WriteString(r.Key + "\n")
	}
	return []byte(b.String())
}

// recipientsOf turns keys into age recipients (keys already validated).
func recipientsOf(keys []string) ([]age.Recipient, error) {
	var out []age.Recipient
	seen := map[string]bool{}
	for _, k := range keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		r, err := age.ParseX25519Recipient(k)
		if err != nil {
			return nil, fmt.Errorf("recipient %s: %v", k, err)
		}
		out = append(out, r)
	}
	return out, nil
}
