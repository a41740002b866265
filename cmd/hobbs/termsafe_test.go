package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"golang.org/x/term"
)

// unescape SRC DST: write DST with the content of SRC in which Go escapes
// (\x1b, \u009b, \a, \\ …) are interpreted, so that a scenario can hold
// control characters without raw bytes in the .txtar.
func cmdUnescape(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: unescape SRC DST")
	}
	var out []byte
	for _, line := range strings.SplitAfter(ts.ReadFile(args[0]), "\n") {
		nl := strings.HasSuffix(line, "\n")
		s, err := strconv.Unquote(`"` + strings.ReplaceAll(strings.TrimSuffix(line, "\n"), `"`, `\"`) + `"`)
		if err != nil {
			ts.Fatalf("unescape %q: %v", line, err)
		}
		out = append(out, s...)
		if nl {
			out = append(out, '\n')
		}
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), out, 0o644))
}

// rawPTY opens a pseudo-terminal pair (openPTY); the terminal side is raw
// (no newline translation), so what the program writes arrives as it is.
func rawPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	m, s, err := openPTY()
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	t.Cleanup(func() { m.Close(); s.Close() })
	if _, err := term.MakeRaw(int(s.Fd())); err != nil {
		t.Fatalf("raw pts: %v", err)
	}
	return m, s
}

// onTerminal runs hobbs with stdout a pseudo-terminal and returns what
// reached the terminal's other side.
func onTerminal(t *testing.T, args ...string) []byte {
	t.Helper()
	master, tty := rawPTY(t)
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(master) // until the terminal side closes (EIO)
		got <- b
	}()
	var errOut bytes.Buffer
	code := Main(args, strings.NewReader(""), tty, &errOut)
	tty.Close()
	out := <-got
	if code != 0 {
		t.Fatalf("hobbs %s: exit %d\n%s", strings.Join(args, " "), code, errOut.String())
	}
	return out
}

// onPipe runs hobbs with stdout a pipe and returns what came through it.
func onPipe(t *testing.T, args ...string) []byte {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r)
		got <- b
	}()
	var errOut bytes.Buffer
	code := Main(args, strings.NewReader(""), w, &errOut)
	w.Close()
	out := <-got
	if code != 0 {
		t.Fatalf("hobbs %s: exit %d\n%s", strings.Join(args, " "), code, errOut.String())
	}
	return out
}

// Memory text the agent wrote cannot drive the user's terminal: on a
// terminal, hobbs memory list, show and search print its control characters
// escaped; through a pipe the same commands give the bytes unchanged.
func TestMemoryTextEscapedOnTerminal(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOBBS_HOME", home)
	var out, errOut bytes.Buffer
	if code := Main([]string{"init", "--no-input"}, strings.NewReader(""), &out, &errOut); code != 0 {
		t.Fatalf("init: %d\n%s", code, errOut.String())
	}
	const (
		osc52 = "\x1b]52;c;ZWNobyBwd25lZA==\x07" // put "echo pwned" on the clipboard
		clear = "\x1b[2J"                        // clear the screen
		c1    = "\u009b31m"                      // CSI as one C1 character
	)
	text := "Clipboard " + osc52 + " then " + clear + " then " + c1 + " del\x7f end"
	out.Reset()
	if code := Main([]string{"memory", "add", text}, strings.NewReader(""), &out, &errOut); code != 0 {
		t.Fatalf("add: %d\n%s", code, errOut.String())
	}
	id := strings.TrimSpace(out.String())
	file, err := os.ReadFile(filepath.Join(home, "memory", "active", id+".md"))
	if err != nil || !bytes.Contains(file, []byte(text)) {
		t.Fatalf("memory file (%v):\n%q", err, file)
	}
	escaped := []string{`\x1b]52;c;ZWNobyBwd25lZA==\x07`, `\x1b[2J`, `\u009b31m`, `del\x7f end`}
	for _, args := range [][]string{
		{"memory", "list"},
		{"memory", "show", id},
		{"memory", "search", "clipboard"},
		{"memory", "context"},
	} {
		name := strings.Join(args, " ")
		tty := onTerminal(t, args...)
		for _, c := range []byte{0x1b, 0x07, 0x7f} {
			if i := bytes.IndexByte(tty, c); i >= 0 {
				t.Errorf("%s: raw %#x reached the terminal at %d: %q", name, c, i, tty)
			}
		}
		if bytes.Contains(tty, []byte("\u009b")) {
			t.Errorf("%s: a raw U+009B reached the terminal: %q", name, tty)
		}
		for _, e := range escaped {
			if name == "memory list" && strings.HasPrefix(e, "del") {
				continue // the summary is cut before
			}
			if !bytes.Contains(tty, []byte(e)) {
				t.Errorf("%s: %s not shown on the terminal: %q", name, e, tty)
			}
		}
		if !bytes.Contains(tty, []byte("Clipboard ")) {
			t.Errorf("%s: text missing: %q", name, tty)
		}

		pipe := onPipe(t, args...)
		for _, raw := range []string{osc52, clear, c1} {
			if !bytes.Contains(pipe, []byte(raw)) {
				t.Errorf("%s: %q did not come through the pipe unchanged: %q", name, raw, pipe)
			}
		}
		if name == "memory show "+id && !bytes.Equal(pipe, file) {
			t.Errorf("show through a pipe is not the file:\n%q\n%q", pipe, file)
		}
	}
	// JSON through a pipe is encoding/json's, unchanged: C1 characters stay
	// raw in it (they are valid JSON), ESC is \u001b.
	j := onPipe(t, "memory", "show", id, "--json")
	if !bytes.Contains(j, []byte(`\u001b]52;c;`)) || !bytes.Contains(j, []byte("\u009b31m")) {
		t.Errorf("show --json through a pipe: %q", j)
	}
}

// The commands that hand the terminal to the agent's session exist under
// those names (else they would lose it to the escaping).
func TestTerminalCommandsExist(t *testing.T) {
	root := newRoot(&app{})
	for path := range terminalCommands {
		c, _, err := root.Find(strings.Fields(path)[1:])
		if err != nil || c.CommandPath() != path {
			t.Errorf("%s: no such command (%v)", path, err)
		}
	}
}
