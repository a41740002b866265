package policy

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"hash/crc32"
	"math/big"
	"regexp"
	"strings"
	"unicode"
)

// Placeholders. The agent holds a placeholder in place of each bound
// secret, and SDKs that check a token's form before they send it (a
// prefix, a length, a checksum, a JWT's parts) must accept it, or the
// request never reaches the proxy that would put the value in. So a
// placeholder has its value's structure:
//
//   - a JWT (three base64url parts, the first a JSON header): the same
//     header and claims, a random signature of the same length. The agent
//     sees the claims (any holder of a JWT can read them); the signature is
//     what makes the token valid.
//   - a token whose last six characters are the CRC32 of the thirty before
//     in base62 (GitHub's ghp_, gho_, ghu_, ghs_, ghr_ and tokens of the
//     same design): thirty random base62 characters and their checksum.
//   - an AWS access key id (AKIA…, ASIA…): the same four letters and
//     sixteen random characters of its alphabet (A-Z, 2-7).
//   - any other token: a type prefix such as "ghp_", "sk-", "xoxb-",
//     "sk-ant-api03-" or "github_pat_" is kept, every other letter or digit
//     replaced by a random one of its class, every other character kept
//     ("xoxb-123-456-abc" keeps its dashes and digit groups). Constant parts
//     of known families stay: the "T3BlbkFJ" inside OpenAI keys, the final
//     "AA" of Anthropic keys.
//
// A value with too few letters and digits to hide 96 bits gets a generic
// placeholder ("hobbs_ph_" and 32 random characters) instead, which a
// format check may refuse. What no placeholder can make work is a secret
// the client never sends but uses itself — a key that signs or encrypts
// (an AWS secret access key, a private key, a webhook secret): docs/vault.md.

// NewPlaceholder returns a random stand-in for value of the same shape.
// The result never contains the value, nor the value it.
func NewPlaceholder(value string) (string, error) {
	for range 8 {
		ph, err := placeholderFor(value)
		if err != nil {
			return "", err
		}
		if ph != value && !strings.Contains(ph, value) && !strings.Contains(value, ph) {
			return ph, nil
		}
	}
	return "", errors.New("cannot make a placeholder")
}

func placeholderFor(value string) (string, error) {
	if ph, ok, err := jwtPlaceholder(value); ok || err != nil {
		return ph, err
	}
	if ph, ok, err := checksumPlaceholder(value); ok || err != nil {
		return ph, err
	}
	if m := awsKeyIDRe.FindStringSubmatch(value); m != nil {
		r, err := randomFrom("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", len(value)-4)
		return m[1] + r, err
	}
	prefix, rest := placeholderPrefix(value)
	n := 0
	for _, c := range rest {
		if c < unicode.MaxASCII && (unicode.IsLetter(c) || unicode.IsDigit(c)) {
			n++
		}
	}
	if n < 20 {
		ph, err := randomFrom("abcdefghijklmnopqrstuvwxyz0123456789", 32)
		return "hobbs_ph_" + ph, err
	}
	// Constant parts of known families stay as they are.
	keepFrom, keepTo := -1, -1
	switch {
	case strings.HasPrefix(prefix, "sk-ant-") && strings.HasSuffix(rest, "AA"):
		keepFrom, keepTo = len(rest)-2, len(rest)
	case strings.HasPrefix(prefix, "sk-") && strings.Contains(rest, "T3BlbkFJ"):
		keepFrom = strings.Index(rest, "T3BlbkFJ")
		keepTo = keepFrom + len("T3BlbkFJ")
	}
	if keepFrom < 0 {
		r, err := reshape(rest)
		return prefix + r, err
	}
	a, err := reshape(rest[:keepFrom])
	if err != nil {
		return "", err
	}
	b, err := reshape(rest[keepTo:])
	return prefix + a + rest[keepFrom:keepTo] + b, err
}

// awsKeyIDRe is an AWS access key id: a four-letter type and sixteen
// characters of the base32 alphabet.
var awsKeyIDRe = regexp.MustCompile(`^(A3T[A-Z0-9]|AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA|ABIA|ACCA)[A-Z2-7]{16}$`)

// jwtPlaceholder: for a JWT (header.claims.signature, base64url, the
// header a JSON object), the same header and claims with a random
// signature of the same length.
func jwtPlaceholder(v string) (string, bool, error) {
	parts := strings.Split(v, ".")
	if len(parts) != 3 || !strings.HasPrefix(v, "eyJ") || len(parts[2]) < 16 {
		return "", false, nil
	}
	for _, p := range parts {
		if strings.Trim(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
			return "", false, nil
		}
	}
	head, err := base64.RawURLEncoding.DecodeString(parts[0])
	var hdr map[string]any
	if err != nil || json.Unmarshal(head, &hdr) != nil {
		return "", false, nil
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return "", false, nil
	}
	b := make([]byte, len(sig))
	if _, err := rand.Read(b); err != nil {
		return "", true, err
	}
	return parts[0] + "." + parts[1] + "." + base64.RawURLEncoding.EncodeToString(b), true, nil
}

// base62 is the alphabet of GitHub's token checksums.
const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// checksumPlaceholder: for a token of GitHub's design (a prefix ending
// in "_", thirty base62 characters, and the CRC32 of those thirty in
// base62, six characters zero-padded), thirty random characters and
// their checksum.
func checksumPlaceholder(v string) (string, bool, error) {
	i := strings.LastIndexByte(v, '_')
	body := v[i+1:]
	if i < 1 || len(body) != 36 || strings.Trim(body, base62) != "" || body[30:] != crc62(body[:30]) {
		return "", false, nil
	}
	r, err := randomFrom(base62, 30)
	if err != nil {
		return "", true, err
	}
	return v[:i+1] + r + crc62(r), true, nil
}

// crc62 is the CRC32 (IEEE) of s in base62, zero-padded to six characters.
func crc62(s string) string {
	n := crc32.ChecksumIEEE([]byte(s))
	out := []byte("000000")
	for i := 5; i >= 0 && n > 0; i-- {
		out[i] = base62[n%62]
		n /= 62
	}
	return string(out)
}

// placeholderPrefix splits off a token-type prefix, kept as it is: up to 16
// bytes of segments of 2-8 lower-case letters and at most two digits, each
// ended by "_", "-" or "." ("ghp_", "sk-ant-oat01-", "github_pat_",
// "xoxb-", "xoxe.xoxp-"). A segment of hex digits only ("deadbeef-" in a
// hex UUID) is part of the secret, not a type: the prefix ends before it.
func placeholderPrefix(v string) (string, string) {
	m := tokenPrefix.FindString(v)
	n := 0
	for n < len(m) {
		end := strings.IndexAny(m[n:], "_-.") + n + 1
		if end > 16 || !strings.ContainsFunc(m[n:end], func(r rune) bool { return r >= 'g' && r <= 'z' }) {
			break
		}
		n = end
	}
	return v[:n], v[n:]
}

var tokenPrefix = regexp.MustCompile(`^(?:[a-z]{2,8}[0-9]{0,2}[_.-])+`)

// reshape replaces every ASCII letter or digit of s by a random one of its
// class (lower, upper, digit), keeping every other character.
func reshape(s string) (string, error) {
	const lower, upper, digit = "abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789"
	var b strings.Builder
	for _, c := range s {
		set := ""
		switch {
		case c >= 'a' && c <= 'z':
			set = lower
		case c >= 'A' && c <= 'Z':
			set = upper
		case c >= '0' && c <= '9':
			set = digit
		}
		if set == "" {
			b.WriteRune(c)
			continue
		}
		r, err := randomFrom(set, 1)
		if err != nil {
			return "", err
		}
		b.WriteString(r)
	}
	return b.String(), nil
}

func randomFrom(set string, n int) (string, error) {
	out := make([]byte, n)
	max := big.NewInt(int64(len(set)))
	for i := range out {
		k, err := rand.Int(rand.Reader, max)
		if err != nil {
			return "", err
		}
		out[i] = set[k.Int64()]
	}
	return string(out), nil
}
