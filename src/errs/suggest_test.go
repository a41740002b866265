package errs

import "testing"

func TestClosest(t *testing.T) {
	names := []string{"json", "instance", "tag", "dry-run", "due"}
	for _, c := range []struct{ name, want string }{
		{"jsno", "json"}, // two edits
		{"instanec", "instance"},
		{"inst", "instance"}, // a prefix
		{"dryrun", "dry-run"},
		{"tags", "tag"},
		{"du", "due"},
		{"verbose", ""},
		{"x", ""},
	} {
		if got := Closest(c.name, names); got != c.want {
			t.Errorf("Closest(%q) = %q, want %q", c.name, got, c.want)
		}
	}
	if got := Closest("ab", []string{"ac", "ad"}); got != "ac" {
		t.Errorf("tie: %q, want the first", got)
	}
	for _, c := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"", "abc", 3}, {"kitten", "sitting", 3}, {"flaw", "lawn", 2}} {
		if got := editDistance(c.a, c.b); got != c.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.d)
		}
	}
}
