package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readSecret takes the value from the file named, else from the input, one
// trailing newline removed unless raw; a terminal is asked only when the
// input is one.
func TestReadSecret(t *testing.T) {
	p := filepath.Join(t.TempDir(), "v")
	if err := os.WriteFile(p, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var prompt bytes.Buffer
	for _, c := range []struct {
		in, file string
		tty, raw bool
		want     string
	}{
		{"piped\n", "", false, false, "piped"},
		{"piped\r\n", "-", false, false, "piped"},
		{"piped\n", "", false, true, "piped\n"},
		{"ignored", p, false, false, "from-file"},
		{"not a terminal\n", "", true, false, "not a terminal"}, // tty claimed, but no file to read hidden from
	} {
		got, err := readSecret(strings.NewReader(c.in), c.tty, &prompt, "tok", c.file, c.raw)
		if err != nil || string(got) != c.want {
			t.Errorf("%+v: %q %v", c, got, err)
		}
	}
	if prompt.Len() != 0 {
		t.Errorf("prompted without a terminal: %q", prompt.String())
	}
	if _, err := readSecret(strings.NewReader(""), false, &prompt, "tok", filepath.Join(t.TempDir(), "missing"), false); err == nil {
		t.Errorf("a missing file was read")
	}
}
