package policy

import (
	"strings"
	"testing"
	"time"
)

// ReadSince finds the hosts a session's proxy passed responses from: its
// own allowed lines with bytes down and the connections it opened (still
// open: no bytes counted yet), not another session's, not a refusal, not an
// empty answer, not before its start.
func TestReadSince(t *testing.T) {
	start := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	log := strings.Join([]string{
		`{"time":"2026-11-26T10:00:05Z","session":"s1","event":"egress.allow","subject":"news.example:443","detail":{"bytes_down":900}}`,
		`{"time":"2026-11-26T10:00:06Z","session":"s1","event":"egress.allow","subject":"news.example:443","detail":{"bytes_down":20}}`,
		`{"time":"2026-11-26T10:00:07Z","session":"s1","event":"egress.allow","subject":"api.anthropic.com:443","detail":{"bytes_down":5}}`,
		`{"time":"2026-11-26T10:00:07Z","session":"s1","event":"egress.allow","subject":"empty.example:443","detail":{"bytes_down":0}}`,
		`{"time":"2026-11-26T10:00:08Z","session":"s1","event":"egress.deny","subject":"evil.example:443","detail":{"bytes_down":0}}`,
		`{"time":"2026-11-26T10:00:08Z","session":"s2","event":"egress.allow","subject":"other.example:443","detail":{"bytes_down":7}}`,
		`{"time":"2026-11-26T09:00:00Z","session":"s1","event":"egress.allow","subject":"old.example:443","detail":{"bytes_down":7}}`,
		`{"time":"2026-11-26T10:00:09Z","session":"s1","event":"egress.open","subject":"held.example:443","detail":{"bytes_down":0}}`,
		`{"time":"2026-11-26T10:00:09Z","session":"s2","event":"egress.open","subject":"other2.example:443","detail":{"bytes_down":0}}`,
		`not json`,
	}, "\n")
	hosts, err := ReadSince(strings.NewReader(log), "s1", start)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(hosts, " ")
	if want := "api.anthropic.com:443 held.example:443 news.example:443"; got != want {
		t.Fatalf("ReadSince = %q, want %q", got, want)
	}
}

// A line too long to read ends the reading with an error, never with a
// shorter list.
func TestReadSinceTooLongLine(t *testing.T) {
	log := `{"session":"s1","event":"egress.allow","subject":"` + strings.Repeat("a", 2<<20) + `"}` + "\n" +
		`{"time":"2026-11-26T10:00:05Z","session":"s1","event":"egress.allow","subject":"news.example:443","detail":{"bytes_down":9}}`
	if _, err := ReadSince(strings.NewReader(log), "s1", time.Time{}); err == nil {
		t.Fatal("a 2 MiB line was skipped silently")
	}
}

// A policy trusts the claude service's hosts and those trusted: names.
func TestTrusts(t *testing.T) {
	p, err := Parse("policy.yaml", []byte("trusted:\n  - docs.example.com\n  - \"*.corp.example\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{
		"api.anthropic.com": true, "docs.example.com": true, "DOCS.example.com.": true, "wiki.corp.example": true,
		"corp.example": false, "example.com": false, "github.com": false, "evil.example": false,
	} {
		if got := p.Trusts(host); got != want {
			t.Errorf("Trusts(%s) = %v, want %v", host, got, want)
		}
	}
	if m := Merge(p, &Policy{}); !m.Trusts("docs.example.com") {
		t.Error("a merged policy lost trusted:")
	}
}
