package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/rogpeppe/go-internal/testscript"
)

// stdoutvar NAME: set $NAME to the last command's stdout, trimmed (to use an
// id a command printed in the next commands).
func cmdStdoutVar(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: stdoutvar NAME")
	}
	ts.Setenv(args[0], strings.TrimSpace(ts.ReadFile("stdout")))
}

// memgen DIR COUNT SIZE: write COUNT seed-format memories of about SIZE
// characters into DIR (mem_20250101_0001.md …; tag "gen", reinforced i%5).
func cmdMemgen(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: memgen DIR COUNT SIZE")
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	size, err := strconv.Atoi(args[2])
	ts.Check(err)
	dir := ts.MkAbs(args[0])
	ts.Check(os.MkdirAll(dir, 0o755))
	words := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"}
	for i := 1; i <= n; i++ {
		var b strings.Builder
		fmt.Fprintf(&b, "Generated memory %d:", i)
		for k := 0; b.Len() < size; k++ {
			b.WriteString(" " + words[(i+k)%len(words)])
		}
		id := fmt.Sprintf("mem_20250101_%04d", i)
		status := "active"
		if strings.Contains(dir, "archive") {
			status = "archived"
		}
		data := fmt.Sprintf("---\nid: %s\ntags: [gen]\ncreated: 2025-01-01\nlast_accessed: null\nreinforced: %d\nsource: generated\nsupersedes: null\nstatus: %s\n---\n\n%s\n",
			id, i%5, status, b.String())
		ts.Check(os.WriteFile(filepath.Join(dir, id+".md"), []byte(data), 0o644))
	}
}

// hookfits FILE MAX: FILE is SessionStart hook JSON whose additionalContext
// is non-empty and at most MAX characters.
func cmdHookFits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: hookfits FILE MAX")
	}
	max, err := strconv.Atoi(args[1])
	ts.Check(err)
	var h struct {
		HookSpecificOutput struct {
			HookEventName     string `json:"hookEventName"`
			AdditionalContext string `json:"additionalContext"`
		} `json:"hookSpecificOutput"`
	}
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[0])), &h))
	n := utf8.RuneCountInString(h.HookSpecificOutput.AdditionalContext)
	if h.HookSpecificOutput.HookEventName != "SessionStart" || n == 0 || n > max {
		ts.Fatalf("hook output: event %q, %d characters of context (max %d)", h.HookSpecificOutput.HookEventName, n, max)
	}
	ts.Logf("additionalContext: %d characters", n)
}
