package egress

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
)

// Secret is a vault value bound to the hosts that may receive it. The
// agent's environment holds Placeholder; the proxy puts Value in its place
// in requests to Hosts only, in the positions In names (headers when nil)
// of the Requests it names (every request when nil), and refuses a request
// that carries Placeholder anywhere else (or, where the proxy sees
// plaintext, Value to any other host).
type Secret struct {
	Name        string   `json:"name"`               // the variable, e.g. GITHUB_TOKEN
	Placeholder string   `json:"placeholder"`        // what the agent holds
	Value       string   `json:"value"`              // the vault's value
	Hosts       []string `json:"hosts"`              // policy domains forms
	In          []string `json:"in,omitempty"`       // positions (placement.go); nil: DefaultIn
	Requests    []string `json:"requests,omitempty"` // "METHODS PATH" rules; nil: every request
	// Kind is "" for a value sent as it is, or one part of an aws-sigv4
	// binding (KindAWSKeyID, KindAWSSecretKey: sigv4.go).
	Kind string `json:"kind,omitempty"`

	place Placement
}

// SessionSecrets is what the launcher hands the proxy for one session, in a
// file on the session's tmpfs (never an argument or the environment): the
// session CA (certificate and key, PEM) and the bound secrets.
type SessionSecrets struct {
	CACert  string    `json:"ca_cert"`
	CAKey   string    `json:"ca_key"`
	Secrets []*Secret `json:"secrets"`

	bindings []Binding // the secrets' names and hosts, for Explain
}

// MinValueScan is the shortest secret value the proxy looks for in
// plaintext requests to other hosts: a shorter one would match ordinary
// text.
const MinValueScan = 8

// ParseSecretHosts validates a binding's hosts, which take the policy's
// domains forms (names, "*." wildcards, IP literals, optional ":port").
func ParseSecretHosts(hosts []string) ([]*Rule, error) {
	if len(hosts) == 0 {
		return nil, errors.New("hosts: at least one host may receive the secret")
	}
	out := make([]*Rule, 0, len(hosts))
	for _, h := range hosts {
		r, err := ParseRule(h)
		if err != nil {
			return nil, fmt.Errorf("hosts: %v", err)
		}
		out = append(out, r)
	}
	return out, nil
}

// LoadSessionSecrets reads the launcher's secrets file and checks it.
func LoadSessionSecrets(path string) (*SessionSecrets, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	defer clear(data)
	var ss SessionSecrets
	if err := json.Unmarshal(data, &ss); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if err := ss.prepare(); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return &ss, nil
}

// prepare parses every binding's hosts and checks the names and
// placeholders.
func (ss *SessionSecrets) prepare() error {
	seen, names := map[string]bool{}, map[string]bool{}
	ss.bindings = nil
	for _, s := range ss.Secrets {
		rules, err := ParseSecretHosts(s.Hosts)
		if err != nil {
			return fmt.Errorf("secret %s: %v", s.Name, err)
		}
		if s.place, err = ParsePlacement(s.In, s.Requests); err != nil {
			return fmt.Errorf("secret %s: %v", s.Name, err)
		}
		switch s.Kind {
		case "", KindAWSKeyID:
		case KindAWSSecretKey:
			s.place.in = 0 // signs; never sent
		default:
			return fmt.Errorf("secret %s: unknown kind %q", s.Name, s.Kind)
		}
		if len(s.Placeholder) < 16 || seen[s.Placeholder] || s.Value == "" || strings.Contains(s.Value, s.Placeholder) {
			return fmt.Errorf("secret %s: bad placeholder", s.Name)
		}
		if names[s.Name] {
			return fmt.Errorf("secret %s: named twice", s.Name)
		}
		seen[s.Placeholder], names[s.Name] = true, true
		ss.bindings = append(ss.bindings, Binding{Name: s.Name, rules: rules, Place: s.place})
	}
	var kinds []string
	for _, s := range ss.Secrets {
		if s.Kind != "" {
			kinds = append(kinds, s.Kind)
		}
	}
	if len(kinds) != 0 && (len(kinds) != 2 || kinds[0] == kinds[1]) {
		return errors.New("an aws-sigv4 binding is one access key id and one secret key")
	}
	return nil
}

// boundTo reports whether a binding with these rules admits host:port
// (canonical host) on the proxy's CONNECT path (connect) or its plain-HTTP
// path. A bare entry admits 443 through a tunnel (HTTPS, which the proxy
// intercepts) and 80 as plain HTTP; an entry with a port admits that port.
func boundTo(rules []*Rule, host string, port int, connect bool) bool {
	ip := isIPLiteral(host)
	for _, r := range rules {
		if r.Port != 0 && r.Port != port || r.Port == 0 && (connect && port != 443 || !connect && port != 80) {
			continue
		}
		if r.Host == host && !r.Wildcard || r.Wildcard && !ip && strings.HasSuffix(host, "."+r.Host) {
			return true
		}
	}
	return false
}

func isIPLiteral(host string) bool {
	h, err := NormalizeHost(host)
	return err == nil && h.IsIP()
}

// The forms a secret takes in a request. A header value or a body holds it
// as is (or, in a form body, percent-encoded); a URL holds it with every
// byte that is not unreserved percent-encoded, which is valid in a path and
// in a query alike.
func urlEscape(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if isUnreserved(c) {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// pathEscape is v as a path segment holds it: unreserved characters, ":"
// and "@" as they are (a Telegram bot token's ":" stays a ":"), every
// other byte percent-encoded ("/" and ";" among them, which would change
// how the path is read).
func pathEscape(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if isUnreserved(c) || c == ':' || c == '@' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

func isUnreserved(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

// decodeUnreserved decodes the percent-encodings of unreserved characters,
// which RFC 3986 says are the characters themselves: "%67hp_x" is "ghp_x".
// Other encodings stay as they are.
func decodeUnreserved(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if c, ok := unhex2(s[i+1], s[i+2]); ok && isUnreserved(c) {
				b.WriteByte(c)
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// decodeAll decodes every valid percent-encoding (and nothing else).
func decodeAll(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if c, ok := unhex2(s[i+1], s[i+2]); ok {
				b.WriteByte(c)
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func unhex2(a, b byte) (byte, bool) {
	x, ok1 := unhex(a)
	y, ok2 := unhex(b)
	return x<<4 | y, ok1 && ok2
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// substituteURL puts the value of each secret in secrets, escaped with
// escape, in place of its placeholder in a URL's escaped path or query.
// Percent-encoded unreserved characters are decoded first, so a
// placeholder written partly encoded is still found.
func substituteURL(rawURL string, secrets []*Secret, escape func(string) string) (string, []string) {
	var used []string
	norm := decodeUnreserved(rawURL)
	for _, s := range secrets {
		if strings.Contains(norm, s.Placeholder) {
			norm = strings.ReplaceAll(norm, s.Placeholder, escape(s.Value))
			used = append(used, s.Name)
		}
	}
	if used == nil {
		return rawURL, nil
	}
	return norm, used
}

// substituteHeader puts values in place of placeholders in one header
// value. A Basic credential is decoded, substituted and encoded again
// (git sends a token as the password of Basic authentication).
func substituteHeader(name, v string, secrets []*Secret) (string, []string) {
	var used []string
	for _, s := range secrets {
		if strings.Contains(v, s.Placeholder) {
			v = strings.ReplaceAll(v, s.Placeholder, s.Value)
			used = append(used, s.Name)
		}
	}
	if isAuthHeader(name) {
		if scheme, cred, ok := strings.Cut(v, " "); ok && strings.EqualFold(scheme, "Basic") {
			raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
			if err == nil {
				dec := string(raw)
				changed := false
				for _, s := range secrets {
					if strings.Contains(dec, s.Placeholder) {
						dec = strings.ReplaceAll(dec, s.Placeholder, s.Value)
						used = append(used, s.Name)
						changed = true
					}
				}
				if changed {
					v = scheme + " " + base64.StdEncoding.EncodeToString([]byte(dec))
				}
			}
		}
	}
	return v, used
}

func isAuthHeader(name string) bool {
	return strings.EqualFold(name, "Authorization") || strings.EqualFold(name, "Proxy-Authorization")
}

// substituteBody puts values in place of placeholders in a request body of
// the given content type: a form body gets the value form-encoded, a JSON
// body JSON-escaped, any other body the value as is.
func substituteBody(body []byte, contentType string, secrets []*Secret) ([]byte, []string) {
	var used []string
	ct := strings.ToLower(contentType)
	for _, s := range secrets {
		ph := []byte(s.Placeholder)
		if !bytes.Contains(body, ph) {
			continue
		}
		val := s.Value
		switch {
		case strings.HasPrefix(ct, "application/x-www-form-urlencoded"):
			val = url.QueryEscape(val)
		case strings.Contains(ct, "json"):
			q, _ := json.Marshal(val)
			val = string(q[1 : len(q)-1])
		}
		body = bytes.ReplaceAll(body, ph, []byte(val))
		used = append(used, s.Name)
	}
	return body, used
}

// needles are the strings whose presence in a request makes it a leak:
// the placeholders of secrets, in the positions where they may not go
// (everywhere for a host they are not bound to), and the values of secrets
// not bound to the host, when long enough to look for.
type needle struct {
	secret string
	text   string
	value  bool     // the real value, not the placeholder
	not    Position // the positions where it is a leak
}

// leakNeedles are the needles of secrets for one request: may(i) is where
// secret i may go in it (0 for a secret not bound to its host), bound(i)
// whether it is bound to the host at all.
func leakNeedles(secrets []*Secret, bound func(int) bool, may func(int) Position) []needle {
	var out []needle
	for i, s := range secrets {
		if bound(i) {
			if not := everywhere &^ may(i); not != 0 {
				out = append(out, needle{s.Name, s.Placeholder, false, not})
			}
			continue
		}
		out = append(out, needle{s.Name, s.Placeholder, false, everywhere})
		if len(s.Value) >= MinValueScan {
			out = append(out, needle{s.Name, s.Value, true, everywhere})
		}
	}
	return out
}

// findLeak reports the first needle that is a leak in position pos found
// in text, as it is, with its percent-encodings decoded, or (for an
// Authorization header) inside a Basic credential.
func findLeak(text string, needles []needle, pos Position) (needle, bool) {
	if text == "" {
		return needle{}, false
	}
	any := false
	for _, n := range needles {
		any = any || n.not&pos != 0
	}
	if !any {
		return needle{}, false
	}
	forms := []string{text}
	if d := decodeAll(text); d != text {
		forms = append(forms, d)
	}
	if d := decodeAll(strings.ReplaceAll(text, "+", " ")); d != text { // form encoding
		forms = append(forms, d)
	}
	if scheme, cred, ok := strings.Cut(text, " "); ok && strings.EqualFold(scheme, "Basic") {
		cred = strings.TrimSpace(cred)
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			if raw, err := enc.DecodeString(cred); err == nil {
				forms = append(forms, string(raw))
			}
		}
	}
	for _, n := range needles {
		if n.not&pos == 0 {
			continue
		}
		for _, f := range forms {
			if strings.Contains(f, n.text) {
				return n, true
			}
		}
	}
	return needle{}, false
}

// maxNeedle is the length of the longest needle.
func maxNeedle(ns []needle) int {
	m := 0
	for _, n := range ns {
		m = max(m, len(n.text))
	}
	return m
}

// hostLeak reports a secret's placeholder or value in a target host name
// (a name under an allowed wildcard is looked up, which carries it out).
func hostLeak(hostText string, secrets []*Secret) (needle, bool) {
	h := strings.ToLower(hostText)
	for _, s := range secrets {
		if strings.Contains(h, strings.ToLower(s.Placeholder)) {
			return needle{s.Name, s.Placeholder, false, everywhere}, true
		}
		if len(s.Value) >= MinValueScan && strings.Contains(h, strings.ToLower(s.Value)) {
			return needle{s.Name, s.Value, true, everywhere}, true
		}
	}
	return needle{}, false
}
