package termsafe

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"testing"
)

var cases = []struct{ name, in, want string }{
	{"plain ASCII", "hello, world", "hello, world"},
	{"newline and tab", "a\tb\nc\n", "a\tb\nc\n"},
	{"plain Unicode", "héllo wörld — 日本語 🙂 Straße ſ K", "héllo wörld — 日本語 🙂 Straße ſ K"},
	{"replacement character itself", "\uFFFD", "\uFFFD"},
	{"U+00A0 and above pass", "\u00a0\u00ff", "\u00a0\u00ff"},
	{"ESC sequence (clear screen)", "x\x1b[2Jy", `x\x1b[2Jy`},
	{"colour", "\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
	{"OSC 52 clipboard, BEL-terminated", "\x1b]52;c;ZWNobyBwd25lZA==\x07", `\x1b]52;c;ZWNobyBwd25lZA==\x07`},
	{"OSC 52 clipboard, ST-terminated", "\x1b]52;c;Zm9v\x1b\\", `\x1b]52;c;Zm9v\x1b\`},
	{"window title", "\x1b]0;pwned\x07", `\x1b]0;pwned\x07`},
	{"BEL", "ding\a", `ding\x07`},
	{"backspace", "secret\b\b\b\b\b\bpublic", `secret\x08\x08\x08\x08\x08\x08public`},
	{"carriage return", "shown\rhidden", `shown\x0dhidden`},
	{"NUL", "a\x00b", `a\x00b`},
	{"vertical tab and form feed", "\v\f", `\x0b\x0c`},
	{"DEL", "a\x7fb", `a\x7fb`},
	{"C1 CSI as UTF-8 (U+009B)", "\u009b2J", `\u009b2J`},
	{"C1 range ends", "\u0080\u009f", `\u0080\u009f`},
	{"C1 OSC as UTF-8 (U+009D)", "\u009d52;c;Zm9v\u009c", `\u009d52;c;Zm9v\u009c`},
	{"lone 8-bit CSI byte", "\x9b2J", `\x9b2J`},
	{"invalid UTF-8", "ok\xff\xfe", `ok\xff\xfe`},
	{"overlong encoding", "\xc0\xaf", `\xc0\xaf`},
	{"surrogate half", "\xed\xa0\x80", `\xed\xa0\x80`},
	{"truncated sequence at the end", "ab\xe6\x97", `ab\xe6\x97`},
	{"truncated sequence in the middle", "\xe6\x97x", `\xe6\x97x`},
	{"mixed", "id\t\x1b[1mbold\x1b[0m ✓\n", "id\t\\x1b[1mbold\\x1b[0m ✓\n"},
}

func TestString(t *testing.T) {
	for _, c := range cases {
		if got := String(c.in); got != c.want {
			t.Errorf("%s: String(%q) = %q, want %q", c.name, c.in, got, c.want)
		}
		if got := string(Append([]byte("pre:"), []byte(c.in))); got != "pre:"+c.want {
			t.Errorf("%s: Append = %q, want %q", c.name, got, "pre:"+c.want)
		}
	}
}

// Whatever the input, nothing a terminal acts on comes out.
func TestNoControlsLeft(t *testing.T) {
	var all []byte
	for c := 0; c < 256; c++ {
		all = append(all, byte(c))
	}
	for r := rune(0x80); r <= 0x9f; r++ {
		all = append(all, string(r)...)
	}
	out := String(string(all))
	for i := 0; i < len(out); i++ {
		c := out[i]
		if c < 0x20 && c != '\n' && c != '\t' || c == 0x7f {
			t.Fatalf("control byte %#x left at %d in %q", c, i, out)
		}
	}
	for _, r := range out {
		if r >= 0x80 && r <= 0x9f || r == 0xfffd {
			t.Fatalf("rune %U left in %q", r, out)
		}
	}
}

// The Writer gives the same result however the text is cut into writes,
// a UTF-8 sequence split between two writes included.
func TestWriterSplitWrites(t *testing.T) {
	for _, c := range cases {
		for cut := 0; cut <= len(c.in); cut++ {
			var b bytes.Buffer
			w := NewWriter(&b)
			n1, err1 := w.Write([]byte(c.in[:cut]))
			n2, err2 := w.Write([]byte(c.in[cut:]))
			if err1 != nil || err2 != nil || n1 != cut || n2 != len(c.in)-cut {
				t.Fatalf("%s: writes returned %d, %v; %d, %v", c.name, n1, err1, n2, err2)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if b.String() != c.want {
				t.Errorf("%s cut at %d: got %q, want %q", c.name, cut, b.String(), c.want)
			}
		}
	}
	// One byte at a time.
	var b bytes.Buffer
	w := NewWriter(&b)
	in := "日本語 \x1b[2J 🙂 \u009b"
	for i := 0; i < len(in); i++ {
		w.Write([]byte{in[i]})
	}
	w.Flush()
	if want := `日本語 \x1b[2J 🙂 \u009b`; b.String() != want {
		t.Errorf("byte by byte: got %q, want %q", b.String(), want)
	}
}

func TestWriterConcurrent(t *testing.T) {
	var b bytes.Buffer
	w := NewWriter(&b)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				w.Write([]byte("line \x1b[2J\n"))
			}
		}()
	}
	wg.Wait()
	if got, want := strings.Count(b.String(), "line \\x1b[2J\n"), 800; got != want {
		t.Fatalf("%d lines, want %d", got, want)
	}
}

// Wrap leaves anything but a terminal alone.
func TestWrapOnlyTerminals(t *testing.T) {
	var b bytes.Buffer
	if Wrap(&b) != &b {
		t.Error("a buffer was wrapped")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if Wrap(w) != w {
		t.Error("a pipe was wrapped")
	}
	f, err := os.Create(t.TempDir() + "/out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if Wrap(f) != f {
		t.Error("a file was wrapped")
	}
	if Wrap(nil) != nil || IsTerminal((*os.File)(nil)) {
		t.Error("nil")
	}
}

// String returns s with its control characters escaped.
func String(s string) string {
	for i := 0; i < len(s); i++ {
		if needs(s[i]) {
			return string(Append(make([]byte, 0, len(s)+16), []byte(s)))
		}
	}
	return s
}
