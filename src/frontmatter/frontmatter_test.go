package frontmatter

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
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
		{"no frontmatter\n", "f.md:1: no frontmatter: the file must start with a line \"---\""},
		{"---\nname: x\nbody\n", "f.md:1: frontmatter is not closed"},
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
	if p.Path != "a.md" || p.Line != 1 || p.Reason != ReasonNotClosed {
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

func TestBlock(t *testing.T) {
	cases := []struct {
		name, doc, fm, body string
		closing             int
	}{
		{"plain", "---\na: 1\n---\nbody\n", "a: 1\n", "body\n", 2},
		{"crlf", "---\r\na: 1\r\n---\r\nbody\r\n", "a: 1\r\n", "body\r\n", 2},
		{"bom and trailing blanks", "\xef\xbb\xbf--- \na: 1\nb: 2\n---\t\n", "a: 1\nb: 2\n", "", 3},
		{"empty block, no final newline", "---\n---", "", "", 1},
		{"only the first closing line counts", "---\na: 1\n---\n---\n", "a: 1\n", "---\n", 2},
		{"indented dashes are not a delimiter", "---\na: |\n  ---\n---\nx", "a: |\n  ---\n", "x", 3},
	}
	for _, c := range cases {
		fm, body, closing, err := Block([]byte(c.doc))
		if err != nil || string(fm) != c.fm || string(body) != c.body || closing != c.closing {
			t.Errorf("%s: Block = %q, %q, %d, %v; want %q, %q, %d", c.name, fm, body, closing, err, c.fm, c.body, c.closing)
		}
	}
	for doc, want := range map[string]string{"": ReasonMissing, "# title\n---\n": ReasonMissing, "---": ReasonNotClosed,
		"---\na: 1\n": ReasonNotClosed, "----\na: 1\n---\n": ReasonMissing} {
		_, _, _, err := Block([]byte(doc))
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Line != 1 || pe.Reason != want {
			t.Errorf("Block(%q) = %v, want line 1: %s", doc, err, want)
		}
	}
}

func TestYAMLLine(t *testing.T) {
	var v struct{ N int }
	for _, c := range []struct {
		doc, msg string
		line     int
	}{
		{"a: 1\nb: [\n", "did not find expected node content", 2},
		{"a: 1\nn: many\n", "cannot unmarshal !!str `many` into int", 2},
		{"\t", "found character that cannot start any token", 0},
	} {
		err := yaml.Unmarshal([]byte(c.doc), &v)
		if err == nil {
			t.Fatalf("%q: no error", c.doc)
		}
		line, msg := YAMLLine(err)
		if line != c.line || !strings.Contains(msg, c.msg) || strings.HasPrefix(msg, "yaml:") {
			t.Errorf("%q: YAMLLine = %d, %q; want line %d, %q", c.doc, line, msg, c.line, c.msg)
		}
	}
	if line, msg := YAMLLine(errors.New("yaml: no line here")); line != 0 || msg != "no line here" {
		t.Errorf("no line: %d %q", line, msg)
	}
}

func TestStarts(t *testing.T) {
	for doc, want := range map[string]bool{"---\n": true, "\ufeff--- \r\nx": true, "---": true, "": false,
		"# t\n---\n": false, " ---\n": false, "----\n": false} {
		if Starts([]byte(doc)) != want {
			t.Errorf("Starts(%q) = %v", doc, !want)
		}
	}
}
