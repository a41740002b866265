package instance

import "testing"

// Sequence numbers are bounded: nothing the agent names a file can wrap
// an id.
func TestParseSeq(t *testing.T) {
	for s, want := range map[string]int{"001": 1, "999999": MaxSeq, "7": 7, "042": 42} {
		if n, err := ParseSeq(s); err != nil || n != want {
			t.Errorf("ParseSeq(%q) = %d, %v", s, n, err)
		}
	}
	for _, s := range []string{"", "1000000", "9223372036854775807", "99999999999999999999", "-1", "+1", " 1", "1a"} {
		if n, err := ParseSeq(s); err == nil {
			t.Errorf("ParseSeq(%q) = %d, want an error", s, n)
		}
	}
}
