package policy

import (
	"strings"
	"testing"
)

// A host that stores what a body binding sends it can hand the value back
// reversed: the masks replace it, by character or by byte, in any letter
// case, with the placeholder reversed alike (so the agent can turn it back
// and use it as it would the value), and NameMask names it.
func TestMaskReversed(t *testing.T) {
	value := "sk_live_Abc123XYZ987def654"
	utf := "pässwörd-mit-ümlauten-0123"
	ph := "hobbs_ph_reversedplaceholder012"
	m := NewMasker([]*Secret{
		{Binding: Binding{Name: "KEY"}, Placeholder: ph, Value: value},
		{Binding: Binding{Name: "UTF"}, Placeholder: "hobbs_ph_utf", Value: utf},
		{Binding: Binding{Name: "PIN"}, Placeholder: "hobbs_ph_pin", Value: "4321"},
	}, func(x *Secret, f MaskForm) string { return f.Of(x.Placeholder) })
	for _, tc := range []struct{ in, want string }{
		{"stored: " + reverseRunes(value) + ".", "stored: " + reverseRunes(ph) + "."},
		{strings.ToUpper(reverseRunes(value)), reverseRunes(ph)},
		{"<" + reverseRunes(utf) + ">", "<" + reverseRunes("hobbs_ph_utf") + ">"},
		{"<" + reverseBytes(utf) + ">", "<" + reverseBytes("hobbs_ph_utf") + ">"},
		{"1234", "1234"}, // a value shorter than MinValueScan only as written: reversed it is ordinary text
	} {
		if got := m.ReplaceString(tc.in); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.in, got, tc.want)
		}
	}
	name := NameMask(map[string]string{"KEY": value})
	if got := name("echo: " + strings.ToLower(reverseRunes(value))); got != "echo: [secret KEY]" {
		t.Errorf("NameMask of the reversed value: %q", got)
	}
}
