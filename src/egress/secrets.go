package egress

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/hobbs-agent/hobbs/src/policy"
)

// A session's secrets (policy.Secret) in the requests the proxy reads:
// substitution and leak detection. A header value or a body holds a value
// as it is (a form body percent-encoded); a URL holds it with what is not
// unreserved percent-encoded (policy.URLEscape in a query, pathEscape in a
// path).

// pathEscape is v as a path segment holds it: unreserved characters, ":"
// and "@" as they are (a Telegram bot token's ":" stays a ":"), every
// other byte percent-encoded ("/" and ";" among them, which would change
// how the path is read).
func pathEscape(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if policy.IsUnreserved(c) || c == ':' || c == '@' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
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
			if c, ok := policy.Unhex2(s[i+1], s[i+2]); ok && policy.IsUnreserved(c) {
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
			if c, ok := policy.Unhex2(s[i+1], s[i+2]); ok {
				b.WriteByte(c)
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// substituteURL puts the value of each secret in secrets, escaped with
// escape, in place of its placeholder in a URL's escaped path or query.
// Percent-encoded unreserved characters are decoded first, so a
// placeholder written partly encoded is still found.
func substituteURL(rawURL string, secrets []*policy.Secret, escape func(string) string) (string, []string) {
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
func substituteHeader(name, v string, secrets []*policy.Secret) (string, []string) {
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
func substituteBody(body []byte, contentType string, secrets []*policy.Secret) ([]byte, []string) {
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
// (policy.Everywhere for a host they are not bound to), and the values of secrets
// not bound to the host, when long enough to look for.
type needle struct {
	secret string
	text   string
	value  bool            // the real value, not the placeholder
	not    policy.Position // the positions where it is a leak
}

// leakNeedles are the needles of secrets for one request: may(i) is where
// secret i may go in it (0 for a secret not bound to its host), bound(i)
// whether it is bound to the host at all.
func leakNeedles(secrets []*policy.Secret, bound func(int) bool, may func(int) policy.Position) []needle {
	var out []needle
	for i, s := range secrets {
		if bound(i) {
			if not := policy.Everywhere &^ may(i); not != 0 {
				out = append(out, needle{s.Name, s.Placeholder, false, not})
			}
			continue
		}
		out = append(out, needle{s.Name, s.Placeholder, false, policy.Everywhere})
		if len(s.Value) >= policy.MinValueScan {
			out = append(out, needle{s.Name, s.Value, true, policy.Everywhere})
		}
	}
	return out
}

// findLeak reports the first needle that is a leak in position pos found
// in text, as it is, with its percent-encodings decoded, or (for an
// Authorization header) inside a Basic credential.
func findLeak(text string, needles []needle, pos policy.Position) (needle, bool) {
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
func hostLeak(hostText string, secrets []*policy.Secret) (needle, bool) {
	h := strings.ToLower(hostText)
	for _, s := range secrets {
		if strings.Contains(h, strings.ToLower(s.Placeholder)) {
			return needle{s.Name, s.Placeholder, false, policy.Everywhere}, true
		}
		if len(s.Value) >= policy.MinValueScan && strings.Contains(h, strings.ToLower(s.Value)) {
			return needle{s.Name, s.Value, true, policy.Everywhere}, true
		}
	}
	return needle{}, false
}
