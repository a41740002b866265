package mail

import (
	"bytes"
	"net/textproto"
	"slices"
	"strings"

	"github.com/emersion/go-msgauth/authres"
	"github.com/emersion/go-msgauth/dkim"
)

// Rules are who may start a run by mail.
type Rules struct {
	// From are the sender addresses allowed (lower case compared).
	From []string
	// TrustAuthResults, when set, is the receiving server whose
	// Authentication-Results header (the topmost, which it adds) is taken
	// instead of a DKIM check here.
	TrustAuthResults string
	// LookupTXT finds a domain's DKIM key records (nil: DNS).
	LookupTXT func(domain string) ([]string, error)
}

// maxSignatures bounds the DKIM signatures checked of one message.
const maxSignatures = 5

// Check reports whether the message raw, from sender (Parse's From), may
// start a run under r: its sender is listed, and a DKIM signature by the
// sender's own domain, covering the From header, verifies (or the trusted
// server's verdict says so). When it may not, why says why, without
// anything of the body.
func Check(raw []byte, sender string, r Rules) (ok bool, why string) {
	sender = strings.ToLower(sender)
	if !slices.ContainsFunc(r.From, func(f string) bool { return strings.EqualFold(f, sender) }) {
		return false, "sender not listed in from:"
	}
	_, domain, found := strings.Cut(sender, "@")
	if !found || domain == "" {
		return false, "the sender has no domain"
	}
	if r.TrustAuthResults != "" {
		return checkAuthResults(raw, domain, r.TrustAuthResults)
	}
	vs, err := dkim.VerifyWithOptions(bytes.NewReader(raw), &dkim.VerifyOptions{LookupTXT: r.LookupTXT, MaxVerifications: maxSignatures})
	if len(vs) == 0 {
		if err != nil {
			return false, "no DKIM signature verified: " + firstLine(err.Error())
		}
		return false, "no DKIM signature"
	}
	other := ""
	for _, v := range vs {
		if v.Err != nil {
			continue
		}
		if !strings.EqualFold(v.Domain, domain) {
			other = v.Domain
			continue
		}
		if !slices.ContainsFunc(v.HeaderKeys, func(k string) bool { return strings.EqualFold(k, "From") }) {
			continue
		}
		return true, "dkim=pass d=" + strings.ToLower(v.Domain)
	}
	if other != "" {
		return false, "DKIM signed by " + clean(other, 100) + ", not by the sender's domain " + domain
	}
	for _, v := range vs {
		if v.Err != nil {
			return false, "DKIM signature does not verify: " + firstLine(v.Err.Error())
		}
	}
	return false, "no DKIM signature by " + domain + " covers From"
}

// checkAuthResults reads the topmost Authentication-Results header: the
// receiving server adds its own above every header the sender wrote, so
// only that one is its verdict.
func checkAuthResults(raw []byte, domain, server string) (bool, string) {
	end := bytes.Index(raw, []byte("\r\n\r\n"))
	if end < 0 {
		end = bytes.Index(raw, []byte("\n\n"))
	}
	if end < 0 {
		end = len(raw)
	}
	var first string
	for _, f := range unfoldHeader(raw[:end]) {
		k, v, ok := strings.Cut(f, ":")
		if ok && textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(k)) == "Authentication-Results" {
			first = v
			break
		}
	}
	if first == "" {
		return false, "no Authentication-Results header"
	}
	id, results, err := authres.Parse(strings.TrimSpace(first))
	if err != nil || !strings.EqualFold(id, server) {
		return false, "the topmost Authentication-Results is not " + server + "'s"
	}
	for _, res := range results {
		switch x := res.(type) {
		case *authres.DKIMResult:
			if x.Value == authres.ResultPass && (strings.EqualFold(x.Domain, domain) || strings.HasSuffix(strings.ToLower(x.Identifier), "@"+domain)) {
				return true, server + ": dkim=pass d=" + domain
			}
		case *authres.DMARCResult:
			if x.Value == authres.ResultPass && strings.EqualFold(x.From, domain) {
				return true, server + ": dmarc=pass from " + domain
			}
		}
	}
	return false, server + " did not verify a DKIM signature or DMARC for " + domain
}

// unfoldHeader splits a header block into its fields, each unfolded.
func unfoldHeader(b []byte) []string {
	var out []string
	for _, line := range strings.Split(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n") {
		if (strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t")) && len(out) > 0 {
			out[len(out)-1] += " " + strings.TrimSpace(line)
			continue
		}
		out = append(out, line)
	}
	return out
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return clean(s, 200)
}
