package egress

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestPlainNameSkipsNothing: for names over the characters the fast path
// takes (and the labels around its limits), skipping the IDNA pass gives
// exactly what the pass gives.
func TestPlainNameSkipsNothing(t *testing.T) {
	const alphabet = "abz09-_."
	r := rand.New(rand.NewPCG(1, 2))
	names := []string{"localhost", "xn--bcher-kva.example", "ab--cd", "a-b", strings.Repeat("a", 63) + ".b",
		strings.Repeat("a", 64) + ".b", strings.Repeat("a.", 126) + "a", strings.Repeat("a.", 127) + "a", "_", "-", "a..b"}
	for range 50000 {
		var b strings.Builder
		for range 1 + r.IntN(12) {
			b.WriteByte(alphabet[r.IntN(len(alphabet))])
		}
		names = append(names, b.String())
	}
	plain := 0
	for _, name := range names {
		if !plainName(name) {
			continue
		}
		if _, isIP, _ := parseLooseIPv4(name); isIP {
			continue
		}
		plain++
		h, err := NormalizeHost(name)
		h2, err2 := normalizeName(name, name)
		if h != h2 || (err == nil) != (err2 == nil) {
			t.Fatalf("NormalizeHost(%q) = %v, %v; the IDNA pass gives %v, %v", name, h, err, h2, err2)
		}
	}
	if plain < 1000 {
		t.Fatalf("only %d plain names tried", plain)
	}
}
