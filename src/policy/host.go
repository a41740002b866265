package policy

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// Host is a normalised target host: either a DNS name in canonical form
// (lower case, ASCII/punycode, no trailing dot) or an IP address.
type Host struct {
	Name string     // canonical DNS name; empty when IP is set
	IP   netip.Addr // valid when the host was an IP literal in any spelling
}

// IsIP reports whether h is an IP literal.
func (h Host) IsIP() bool { return h.IP.IsValid() }

// String is the canonical text of h: the name, or the IP without brackets.
func (h Host) String() string {
	if h.IsIP() {
		return h.IP.String()
	}
	return h.Name
}

var idnaProfile = idna.New(
	idna.MapForLookup(),
	idna.BidiRule(),
	idna.Transitional(false),
	idna.StrictDomainName(false), // allow "_" (SRV-style and some real hosts); checked below
)

// NormalizeHost turns a host as a client wrote it (without port; IPv6 may be
// bracketed) into its one canonical form. It accepts every spelling of an
// IPv4 address that a resolver library would (inet_aton: 1 to 4 parts,
// decimal, octal with a leading 0, hex with 0x), IPv4-mapped IPv6, and
// drops IPv6 zone ids. Names are lower-cased, stripped of one trailing dot
// and converted to punycode; anything else that is not a valid DNS name is
// an error.
func NormalizeHost(s string) (Host, error) {
	if s == "" {
		return Host{}, errors.New("empty host")
	}
	if len(s) > 300 {
		return Host{}, errors.New("host too long")
	}
	if !utf8.ValidString(s) {
		return Host{}, errors.New("host is not valid UTF-8")
	}
	if strings.HasPrefix(s, "[") || strings.Contains(s, ":") {
		return normalizeIPv6(s)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x21 || c == 0x7f || strings.IndexByte("%/\\@?#[]:,;\"'<>|{}^`", c) >= 0 {
			return Host{}, fmt.Errorf("invalid character %q in host", c)
		}
	}
	name := strings.TrimSuffix(s, ".")
	if name == "" || strings.HasSuffix(name, ".") {
		return Host{}, fmt.Errorf("invalid host %q", s)
	}
	if ip, ok, err := parseLooseIPv4(name); ok || err != nil {
		if err != nil {
			return Host{}, err
		}
		return Host{IP: ip}, nil
	}
	return normalizeName(s, name)
}

// normalizeName is NormalizeHost's IDNA pass for name (s without its
// trailing dot, not an IPv4 spelling).
func normalizeName(s, name string) (Host, error) {
	ascii, err := idnaProfile.ToASCII(name)
	if err != nil {
		return Host{}, fmt.Errorf("invalid host %q: %v", s, err)
	}
	ascii = strings.ToLower(strings.TrimSuffix(ascii, "."))
	if err := checkDNSName(ascii); err != nil {
		return Host{}, fmt.Errorf("invalid host %q: %v", s, err)
	}
	// The canonical form must be a fixed point: a name whose punycode does
	// not survive a second pass is refused rather than guessed at.
	if again, err := idnaProfile.ToASCII(ascii); err != nil || again != ascii {
		return Host{}, fmt.Errorf("invalid host %q: not a stable IDNA name", s)
	}
	// A name whose mapping produced an IPv4 spelling (full-width digits) is
	// an IP literal too.
	if ip, ok, err := parseLooseIPv4(ascii); ok || err != nil {
		if err != nil {
			return Host{}, err
		}
		return Host{IP: ip}, nil
	}
	return Host{Name: ascii}, nil
}

func normalizeIPv6(s string) (Host, error) {
	if strings.HasPrefix(s, "[") {
		if !strings.HasSuffix(s, "]") {
			return Host{}, fmt.Errorf("invalid host %q", s)
		}
		s = s[1 : len(s)-1]
	}
	if i := strings.IndexByte(s, '%'); i >= 0 { // zone id, raw or as %25
		s = s[:i]
	}
	ip, err := netip.ParseAddr(s)
	if err != nil || !ip.Is6() {
		return Host{}, fmt.Errorf("invalid IPv6 host %q", s)
	}
	return Host{IP: ip.Unmap()}, nil
}

// parseLooseIPv4 reports whether s looks like an IPv4 literal in any of the
// spellings inet_aton accepts. ok with a nil error means s is that address;
// an error means s is numeric in shape but not a valid address (refused,
// never resolved as a name). A name whose last label is all digits is
// treated as numeric: no real TLD is numeric.
func parseLooseIPv4(s string) (netip.Addr, bool, error) {
	parts := strings.Split(s, ".")
	last := parts[len(parts)-1]
	if !looksNumeric(last) {
		return netip.Addr{}, false, nil
	}
	if len(parts) > 4 {
		return netip.Addr{}, false, fmt.Errorf("invalid IPv4 host %q", s)
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		v, err := parseIPv4Part(p)
		if err != nil {
			return netip.Addr{}, false, fmt.Errorf("invalid IPv4 host %q", s)
		}
		vals[i] = v
	}
	var n uint64
	for i, v := range vals[:len(vals)-1] {
		if v > 255 {
			return netip.Addr{}, false, fmt.Errorf("invalid IPv4 host %q", s)
		}
		n |= v << (24 - 8*uint(i))
	}
	lastMax := uint64(1)<<(8*(5-uint(len(vals)))) - 1
	if vals[len(vals)-1] > lastMax {
		return netip.Addr{}, false, fmt.Errorf("invalid IPv4 host %q", s)
	}
	n |= vals[len(vals)-1]
	b := [4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}
	return netip.AddrFrom4(b), true, nil
}

func looksNumeric(p string) bool {
	if p == "" {
		return false
	}
	if len(p) > 2 && (p[:2] == "0x" || p[:2] == "0X") {
		return true
	}
	for i := 0; i < len(p); i++ {
		if p[i] < '0' || p[i] > '9' {
			return false
		}
	}
	return true
}

func parseIPv4Part(p string) (uint64, error) {
	if p == "" || len(p) > 12 {
		return 0, errors.New("bad part")
	}
	base := 10
	switch {
	case len(p) > 2 && (p[:2] == "0x" || p[:2] == "0X"):
		base, p = 16, p[2:]
	case len(p) > 1 && p[0] == '0':
		base, p = 8, p[1:]
	}
	return strconv.ParseUint(p, base, 32)
}

// checkDNSName validates a lower-case ASCII name: labels of letters, digits,
// '-' and '_', 1-63 bytes, not starting or ending with '-', total ≤253. It
// allocates only to say what is wrong.
func checkDNSName(s string) error {
	if len(s) == 0 || len(s) > 253 {
		return errors.New("bad length")
	}
	for rest, more := s, true; more; {
		var label string
		label, rest, more = strings.Cut(rest, ".")
		if label == "" || len(label) > 63 {
			return errors.New("empty or overlong label")
		}
		if label[0] == '-' || label[len(label)-1] == '-' {
			return errors.New("label starts or ends with '-'")
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("invalid character %q", c)
			}
		}
	}
	return nil
}

// ParsePort parses a decimal port strictly (no sign, no leading zero, 1..65535).
func ParsePort(s string) (int, error) {
	if s == "" || len(s) > 5 || s[0] == '0' {
		return 0, fmt.Errorf("invalid port %q", s)
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("invalid port %q", s)
		}
		n = n*10 + int(s[i]-'0')
	}
	if n < 1 || n > 65535 {
		return 0, fmt.Errorf("invalid port %q", s)
	}
	return n, nil
}
