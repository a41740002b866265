package frontmatter

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

type doc struct {
	Name string   `yaml:"name"`
	Tags []string `yaml:"tags"`
}

func TestRoundTrip(t *testing.T) {
	in := doc{Name: "x", Tags: []string{"a", "b"}}
	data, err := Encode(in, []byte("\nbody line\n"))
	if err != nil {
		t.Fatal(err)
	}
	var out doc
	body, _, err := Decode("f.md", data, &out, true)
	if err != nil {
		t.Fatal(err)
	}
	if out.Name != "x" || len(out.Tags) != 2 || string(body) != "\nbody line\n" {
		t.Fatalf("%+v %q", out, body)
	}
}

func TestErrorsNameFileLine(t *testing.T) {
	cases := []struct{ doc, want string }{
		{"no frontmatter\n", "f.md:1: missing frontmatter"},
		{"---\nname: x\nbody\n", "f.md:3: frontmatter is not closed"},
		{"---\nname: x\nbogus: 1\n---\n", `f.md:3: field bogus not found`},
		{"---\nname: x\ntags: [a\n---\n", "f.md:"},
		{"---\nname: [1]\n---\n", "f.md:2: cannot unmarshal"},
		{"---\n- a\n---\n", "f.md:2: frontmatter must be a mapping"},
	}
	for _, c := range cases {
		var d doc
		_, _, err := Decode("f.md", []byte(c.doc), &d, true)
		var pe *ParseError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.doc, err, c.want)
		}
	}
}

func TestKeyLine(t *testing.T) {
	var d doc
	_, n, err := Decode("f", []byte("---\nname: x\n\ntags: [a]\n---\n"), &d, true)
	if err != nil {
		t.Fatal(err)
	}
	if KeyLine(n, "tags") != 4 || KeyLine(n, "name") != 2 {
		t.Fatalf("lines %d %d", KeyLine(n, "tags"), KeyLine(n, "name"))
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte("---\nname: x\ntags: [a, b]\n---\nbody\n"))
	f.Add([]byte("---\n---\n"))
	f.Add([]byte("---\nname: &a [*a]\n---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var d doc
		_, _, err := Decode("f", data, &d, true)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error of type %T: %v", err, err)
			}
		}
	})
}

func TestProblemOf(t *testing.T) {
	_, _, _, err := Split("a.md", []byte("---\nx: 1\n"))
	p := ProblemOf("ignored.md", fmt.Errorf("load: %w", err))
	if p.Path != "a.md" || p.Line != 2 || p.Reason != "frontmatter is not closed by a --- line" {
		t.Fatalf("from a wrapped ParseError: %+v", p)
	}
	if p.String() != err.Error() {
		t.Fatalf("String %q differs from the ParseError's %q", p.String(), err.Error())
	}
	p = ProblemOf("b.md", os.ErrPermission)
	if p.Path != "b.md" || p.Line != 0 || p.String() != "b.md: permission denied" {
		t.Fatalf("from another error: %+v %q", p, p.String())
	}
}
