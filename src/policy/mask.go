package policy

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"
)

// Masking. The agent never holds a bound secret's value, so nothing the
// proxy hands it may hold one either: what a bound host sends back (a
// stored body read again, a redirect's Location, a cookie, an error the
// proxy quotes, the credential reflected) has every value replaced by its
// placeholder, which the agent can then use again as it would the value.
// The audit log names the secret instead. The proxy's maskers (src/egress,
// mask.go) cover the text it writes, every response it reads and every
// audit line; NameMask covers text that leaves a session for the owner.
//
// A value is recognised as written and in the forms servers commonly give
// it back (maskForms): in any letter case, percent-encoded, JSON-escaped,
// hex-encoded (either case), base64-encoded (standard or URL-safe
// alphabet, at any of the three byte alignments, padded or not) and
// reversed (by character or by byte, in any letter case: a host that
// stores what a body binding sends it may hand it back transformed, and
// reversing is the cheapest transform to try). What no mask can recognise
// — the value hashed, encrypted, compressed in a body that does not say
// so, encoded twice, reversed and then encoded, cut in pieces or wrapped
// across lines — is the reason a binding puts the value only in
// credential positions (placement.go); docs/egress.md and docs/vault.md
// state the remaining risk.

// maskPattern is one form of one value and what replaces it.
type maskPattern struct {
	find []byte // ASCII lower case when fold
	repl []byte
	fold bool // matched in any ASCII letter case
}

// Masker replaces values in text, in one pass: tables of the bytes a
// pattern may start with and of its first two bytes (in lower case) say
// where one may start, and only there are the patterns compared. Built
// once per server (the secrets do not change while it runs).
type Masker struct {
	pats    []maskPattern
	short   []maskPattern // shorter than two bytes: looked for one by one
	longest int
	start   [256]bool             // bytes a pattern may start with
	first2  *[1 << 16 / 64]uint64 // patterns' first two bytes, lower case
}

// NewMasker builds the Masker that replaces each secret's value, in each
// of its forms, by what repl gives for that secret and form.
func NewMasker(secrets []*Secret, repl func(x *Secret, f MaskForm) string) *Masker {
	m := &Masker{first2: new([1 << 16 / 64]uint64)}
	for _, x := range secrets {
		for _, f := range maskForms(x.Value) {
			find := f.Of(x.Value)
			if find == "" {
				continue
			}
			p := maskPattern{find: []byte(find), repl: []byte(repl(x, f)), fold: f.Fold}
			if p.fold {
				p.find = lowerASCII(p.find)
			}
			dup := false
			for _, q := range append(m.pats, m.short...) {
				dup = dup || bytes.Equal(q.find, p.find) && q.fold == p.fold
			}
			if dup {
				continue
			}
			m.longest = max(m.longest, len(p.find))
			if len(p.find) < 2 {
				m.short = append(m.short, p)
				continue
			}
			m.pats = append(m.pats, p)
			k := uint16(lowerByte(p.find[0]))<<8 | uint16(lowerByte(p.find[1]))
			m.first2[k/64] |= 1 << (k % 64)
			for c := range 256 {
				if byte(c) == p.find[0] || p.fold && lowerByte(byte(c)) == p.find[0] {
					m.start[c] = true
				}
			}
		}
	}
	return m
}

// MaskForm is one way a value appears in what comes back: of turns a
// value (or its placeholder) into that form. Fold: the form is matched in
// any letter case; KeepLen: a replacement must be as long as the value
// (base64, whose characters after it depend on the bytes before).
type MaskForm struct {
	Of      func(string) string
	Fold    bool
	KeepLen bool
}

// maskForms are the forms of value the masks look for. A value shorter
// than MinValueScan is looked for only as written and percent-encoded, in
// its own case: in other forms it would match ordinary text.
func maskForms(value string) []MaskForm {
	forms := []MaskForm{
		{Of: func(v string) string { return v }},
		{Of: URLEscape},
		{Of: url.QueryEscape},
		{Of: url.PathEscape},
	}
	if len(value) < MinValueScan {
		return forms
	}
	for i := range forms { // a server may change the letters' case, and hex digits are either
		forms[i].Fold = true
	}
	forms = append(forms,
		MaskForm{Of: jsonEscape, Fold: true},
		MaskForm{Of: func(v string) string { return strings.ReplaceAll(jsonEscape(v), "/", `\/`) }, Fold: true},
		MaskForm{Of: JSONEscapeAll, Fold: true},
		MaskForm{Of: func(v string) string { return hex.EncodeToString([]byte(v)) }, Fold: true},
		MaskForm{Of: reverseRunes, Fold: true},
		MaskForm{Of: reverseBytes, Fold: true},
	)
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		for a := range 3 {
			forms = append(forms, MaskForm{Of: func(v string) string { return base64Core(enc, a, v) }, KeepLen: true})
		}
	}
	return forms
}

// reverseRunes is v with its characters in reverse order.
func reverseRunes(v string) string {
	r := []rune(v)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}

// reverseBytes is v with its bytes in reverse order (for a value that is
// not ASCII, not valid UTF-8: as a program that reverses bytes gives it).
func reverseBytes(v string) string {
	b := []byte(v)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}

// jsonEscape is v as a JSON string holds it, without the quotes (with the
// HTML characters escaped, as Go and others do by default).
func jsonEscape(v string) string {
	q, _ := json.Marshal(v)
	return string(q[1 : len(q)-1])
}

// JSONEscapeAll is v with every character that is not printable ASCII
// written as a \u escape, as some JSON encoders write it (a form a value
// is recognised in).
func JSONEscapeAll(v string) string {
	var b strings.Builder
	for _, r := range v {
		if r < 0x80 && r != '"' && r != '\\' && r >= 0x20 {
			b.WriteRune(r)
			continue
		}
		if r > 0xffff {
			r1, r2 := (r-0x10000)>>10+0xd800, (r-0x10000)&0x3ff+0xdc00
			fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
			continue
		}
		fmt.Fprintf(&b, `\u%04x`, r)
	}
	return b.String()
}

// base64Core is the part of the base64 encoding of any text that holds v
// at byte offset a (mod 3) which depends on v alone: the characters whose
// six bits all come from v. The characters at either edge mix v's bits
// with its neighbours' and are left out (so they stay as they are when
// the core is replaced). Padding comes after the last character, so
// padded and unpadded encodings share the core.
func base64Core(enc *base64.Encoding, a int, v string) string {
	buf := make([]byte, a+len(v))
	copy(buf[a:], v)
	s := enc.EncodeToString(buf)
	start := (8*a + 5) / 6 // the first character past the offset's bits
	end := 8 * (a + len(v)) / 6
	if end <= start {
		return ""
	}
	return s[start:end]
}

// StandIn is the text of the placeholder's length-keeping stand-in for
// value in forms that must keep lengths (hex, base64): the placeholder
// itself when it is as long as the value (NewPlaceholder keeps the shape),
// else the placeholder repeated or cut to the value's length.
func StandIn(x *Secret) string {
	ph := x.Placeholder
	if len(ph) == len(x.Value) {
		return ph
	}
	return strings.Repeat(ph, len(x.Value)/len(ph)+1)[:len(x.Value)]
}

// replace returns b with every pattern replaced, the leftmost match
// first (b itself when none is found).
func (m *Masker) Replace(b []byte) []byte {
	if m == nil || len(b) == 0 {
		return b
	}
	for _, p := range m.short {
		b = bytes.ReplaceAll(b, p.find, p.repl)
	}
	if len(m.pats) == 0 {
		return b
	}
	var out []byte
	last := 0
	for i := 0; i+1 < len(b); i++ {
		if !m.start[b[i]] {
			continue
		}
		if k := uint16(lowerByte(b[i]))<<8 | uint16(lowerByte(b[i+1])); m.first2[k/64]&(1<<(k%64)) == 0 {
			continue
		}
		for _, p := range m.pats {
			if !p.matchAt(b, i) {
				continue
			}
			out = append(append(out, b[last:i]...), p.repl...)
			last = i + len(p.find)
			i = last - 1
			break
		}
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}

// matchAt reports whether the pattern is in b at i.
func (p *maskPattern) matchAt(b []byte, i int) bool {
	if i+len(p.find) > len(b) {
		return false
	}
	if !p.fold {
		return bytes.Equal(b[i:i+len(p.find)], p.find)
	}
	for j, c := range p.find {
		if lowerByte(b[i+j]) != c {
			return false
		}
	}
	return true
}

// Longest is the length of the longest form the masker looks for: a
// stream masked in pieces holds back one byte less, as it may begin one.
func (m *Masker) Longest() int { return m.longest }

func lowerByte(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// ReplaceString is Replace for a string.
func (m *Masker) ReplaceString(s string) string {
	if m == nil || len(m.pats)+len(m.short) == 0 {
		return s
	}
	return string(m.Replace([]byte(s)))
}

func lowerASCII(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		out[i] = lowerByte(c)
	}
	return out
}

// NameMask returns a function that replaces each value of values (by
// variable name), in every form the proxy's masks recognise, by "[secret
// NAME]", as the audit log names it. Empty values are skipped. It is for
// text that leaves a session for the owner (a chat turn's reply): the
// agent holds env: values, and what it writes is its own.
func NameMask(values map[string]string) func(string) string {
	var sec []*Secret
	for _, n := range sortedNames(values) {
		if values[n] != "" {
			sec = append(sec, &Secret{Binding: Binding{Name: n}, Value: values[n]})
		}
	}
	m := NewMasker(sec, func(x *Secret, _ MaskForm) string { return "[secret " + x.Name + "]" })
	return m.ReplaceString
}

func sortedNames(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// URLEscape is v as a URL holds it: every byte that is not unreserved
// percent-encoded, which is valid in a path and in a query alike.
func URLEscape(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if IsUnreserved(c) {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// IsUnreserved reports whether c is an unreserved character of a URL
// (RFC 3986): a letter, a digit, "-", ".", "_" or "~".
func IsUnreserved(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}
