package egress

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/hobbs-agent/hobbs/src/policy"
)

// FuzzSubstitute checks secret substitution against a reference (plain
// string replacement on the decoded form) and the safety property the
// proxy rests on: whatever it would put a secret in place of for a bound
// host, it finds as a leak for any other host.
func FuzzSubstitute(f *testing.F) {
	const value = "ghp_VALUEabcdefghijklmnopqrstuvwxyz0123"
	ph, err := policy.NewPlaceholder(value)
	if err != nil {
		f.Fatal(err)
	}
	half := len(ph) / 2
	enc := func(s string) string { // every byte percent-encoded
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			b.WriteString("%" + strings.ToUpper(string("0123456789abcdef"[s[i]>>4])+string("0123456789abcdef"[s[i]&15])))
		}
		return b.String()
	}
	for _, seed := range []string{
		ph, "Bearer " + ph, ph + ph, "a=" + ph + "&b=" + ph,
		ph[:half] + "\r\n " + ph[half:], // split across a folded header line
		ph[:half] + "%" + ph[half:],
		enc(ph[:3]) + ph[3:], enc(ph), "%2" + ph, "/x/" + ph + "/y?z=" + ph,
		strings.ToLower(ph), ph[:len(ph)-1], "",
	} {
		f.Add(seed)
	}
	secrets := []*policy.Secret{{Binding: policy.Binding{Name: "T"}, Placeholder: ph, Value: value}}
	needles := []needle{{"T", ph, false, policy.Everywhere}}
	f.Fuzz(func(t *testing.T, in string) {
		// Header values: exact replacement.
		got, used := substituteHeader("X-Token", in, secrets)
		if want := strings.ReplaceAll(in, ph, value); got != want || (used != nil) != strings.Contains(in, ph) {
			t.Fatalf("header %q: got %q want %q (used %v)", in, got, want, used)
		}
		if strings.Contains(in, ph) {
			if _, ok := findLeak(in, needles, policy.InHeader); !ok {
				t.Fatalf("header %q: substituted but not found as a leak", in)
			}
		}
		// A Basic credential: replaced inside, found as a leak inside.
		basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("u:"+in))
		got, _ = substituteHeader("Authorization", basic, secrets)
		raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(got, "Basic "))
		if err != nil || string(raw) != "u:"+strings.ReplaceAll(in, ph, value) {
			t.Fatalf("basic %q: got %q", in, raw)
		}
		if _, ok := findLeak(basic, needles, policy.InHeader); !ok && strings.Contains("u:"+in, ph) {
			t.Fatalf("basic %q: not found as a leak", in)
		}
		// Bodies: JSON gets the value JSON-escaped.
		body, _ := substituteBody([]byte(in), "application/json", secrets)
		q, _ := json.Marshal(value)
		if want := strings.ReplaceAll(in, ph, string(q[1:len(q)-1])); string(body) != want {
			t.Fatalf("body %q: got %q want %q", in, body, want)
		}
		// URLs: on a valid escaped URL, the decoded result is the decoded
		// input with the value in place of the placeholder; nothing of the
		// placeholder is left; and what is substituted is found as a leak.
		if _, err := url.PathUnescape(in); err != nil {
			return
		}
		gotURL, usedURL := substituteURL(in, secrets, policy.URLEscape)
		dec, _ := url.PathUnescape(gotURL)
		ref, _ := url.PathUnescape(decodeUnreserved(in))
		if want := strings.ReplaceAll(ref, ph, value); dec != want {
			t.Fatalf("url %q: got %q (decoded %q) want %q", in, gotURL, dec, want)
		}
		if strings.Contains(decodeUnreserved(gotURL), ph) {
			t.Fatalf("url %q: placeholder left in %q", in, gotURL)
		}
		if usedURL != nil {
			if _, ok := findLeak(in, needles, policy.InHeader); !ok {
				t.Fatalf("url %q: substituted but not found as a leak", in)
			}
		}
	})
}
