package layer

import (
	"fmt"
	"strings"
	"testing"
)

func TestLines(t *testing.T) {
	for _, c := range []struct {
		name, base, ours, theirs, want string
		ok                             bool
	}{
		{"theirs edits one line", "a\nb\nc\n", "a\nb\nc\n", "a\nB\nc\n", "a\nB\nc\n", true},
		{"both edit apart", "a\nb\nc\nd\ne\n", "A\nb\nc\nd\ne\n", "a\nb\nc\nd\nE\n", "A\nb\nc\nd\nE\n", true},
		{"same edit both", "a\nb\n", "a\nX\n", "a\nX\n", "a\nX\n", true},
		{"both edit same line", "a\nb\nc\n", "a\nO\nc\n", "a\nT\nc\n", "", false},
		{"both append", "a\n", "a\no\n", "a\nt\n", "a\no\nt\n", true},
		{"insert and delete apart", "a\nb\nc\nd\n", "a\nc\nd\n", "a\nb\nc\nd\nz\n", "a\nc\nd\nz\n", true},
		{"no newline at end", "a\nb", "a\nb", "a\nc", "a\nc", true},
		{"empty base both add", "", "x\n", "y\n", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := Lines([]byte(c.base), []byte(c.ours), []byte(c.theirs))
			if ok != c.ok || (ok && string(got) != c.want) {
				t.Fatalf("Lines = %q, %v; want %q, %v", got, ok, c.want, c.ok)
			}
		})
	}
}

func TestMerge3Sides(t *testing.T) {
	b, o, x := Of([]byte("b\n")), Of([]byte("o\n")), Of([]byte("x\n"))
	if v, ok := Merge3(b, o, b, nil); !ok || !v.Equal(o) {
		t.Fatal("theirs unchanged: ours stays")
	}
	if v, ok := Merge3(b, b, x, nil); !ok || !v.Equal(x) {
		t.Fatal("ours unchanged: theirs is taken")
	}
	if v, ok := Merge3(b, b, Absent, nil); !ok || v.Exists {
		t.Fatal("a removal on theirs only is taken")
	}
	if _, ok := Merge3(b, o, Absent, nil); ok {
		t.Fatal("a removal against a change must conflict")
	}
	if _, ok := Merge3(Absent, o, x, nil); ok {
		t.Fatal("two different creations must conflict")
	}
	called := false
	by := func(base, ours, theirs Version) (Version, bool) { called = true; return ours, true }
	if _, ok := Merge3(b, o, x, by); !ok || !called {
		t.Fatal("a change on both sides goes to the Merger")
	}
}

type mapTree map[string]string

func (m mapTree) Get(p string) (Version, error) {
	v, ok := m[p]
	if !ok {
		return Absent, nil
	}
	if v == "ERR" {
		return Absent, fmt.Errorf("unreadable")
	}
	return Of([]byte(v)), nil
}

func TestTrees(t *testing.T) {
	base := mapTree{"a": "1\n", "b": "1\n", "c": "1\n"}
	ours := mapTree{"a": "1\n", "b": "2\n", "c": "1\n", "e": "ERR"}
	theirs := mapTree{"a": "3\n", "b": "4\n", "d": "new\n", "e": "x"}
	out := Trees([]string{"d", "a", "b", "c", "e"}, base, ours, theirs, nil)
	var got []string
	for _, o := range out {
		got = append(got, fmt.Sprintf("%s:%v:%v:%s", o.Path, o.Changed, o.Conflict, o.Result.Data))
	}
	want := "a:true:false:3\n|b:false:true:|c:true:false:|d:true:false:new\n|e:false:true:"
	if s := strings.Join(got, "|"); s != want {
		t.Fatalf("got  %s\nwant %s", s, want)
	}
}

func FuzzLines(f *testing.F) {
	f.Add("a\nb\n", "a\nc\n", "a\nb\nd\n")
	f.Fuzz(func(t *testing.T, b, o, x string) {
		got, ok := Lines([]byte(b), []byte(o), []byte(x))
		if !ok {
			return
		}
		// A side that did not change yields exactly the other.
		if b == o && string(got) != x {
			t.Fatalf("ours unchanged: got %q want %q", got, x)
		}
		if b == x && string(got) != o {
			t.Fatalf("theirs unchanged: got %q want %q", got, o)
		}
	})
}

func TestMergeExec(t *testing.T) {
	x := func(s string, exec bool) Version { v := Of([]byte(s)); v.Exec = exec; return v }
	for _, c := range []struct {
		name               string
		base, ours, theirs Version
		want               bool
	}{
		{"theirs set it", x("a\n", false), x("a\n", false), x("a\n", true), true},
		{"theirs cleared it", x("a\n", true), x("b\n", true), x("a\n", false), false},
		{"ours set it, theirs changed the text", x("a\n", false), x("a\n", true), x("b\n", false), true},
		{"theirs made it", Absent, Absent, x("a\n", true), true},
		{"both made it", Absent, x("a\n", true), x("a\n", false), true},
		{"merged text keeps ours", x("a\nb\nc\n", true), x("A\nb\nc\n", true), x("a\nb\nC\n", true), true},
	} {
		got, ok := Merge3(c.base, c.ours, c.theirs, nil)
		if !ok || got.Exec != c.want {
			t.Errorf("%s: exec %v ok %v, want %v", c.name, got.Exec, ok, c.want)
		}
	}
}
