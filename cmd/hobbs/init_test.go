package main

import (
	"bufio"
	"bytes"
	"io/fs"
	"strings"
	"testing"

	"github.com/hobbs-agent/hobbs"
)

func TestCoCreateFoundation(t *testing.T) {
	tpl := "# F\n\n## Core Values\n\n<!-- x -->\n\n## Principles\n\n<!-- y -->\n"
	doc, err := coCreateFoundation([]byte(tpl), strings.NewReader("a; b\n\n"), &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	if !strings.Contains(s, "## Core Values\n\n- a\n- b\n\n## Principles") {
		t.Fatalf("values not filled:\n%s", s)
	}
	if !strings.Contains(s, "<!-- y -->") {
		t.Fatalf("skipped section lost its template:\n%s", s)
	}
	if strings.Contains(s, "<!-- x -->") {
		t.Fatalf("answered section kept its placeholder:\n%s", s)
	}
}

// Every question fills a section the shipped template has.
func TestFoundationQuestionsMatchTemplate(t *testing.T) {
	tpl, err := fs.ReadFile(hobbs.Templates, "foundation.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range foundationQuestions {
		if !strings.Contains(string(tpl), "\n## "+q.Heading+"\n") {
			t.Errorf("templates/foundation.md has no section %q", q.Heading)
		}
	}
}

// The redo's question takes y or yes (any case) and nothing else, and
// leaves the rest of the input to the interview.
func TestAskRedoFoundation(t *testing.T) {
	for in, want := range map[string]bool{"y\nrest": true, " YES \n": true, "n\n": false, "\n": false, "": false, "sure\n": false} {
		var w bytes.Buffer
		r := bufio.NewReader(strings.NewReader(in))
		got, err := askRedoFoundation(r, &w)()
		if err != nil || got != want || !strings.Contains(w.String(), "[y/N]") {
			t.Errorf("%q: %v %v (asked %q)", in, got, err, w.String())
		}
		if rest, _ := r.ReadString(0); in == "y\nrest" && rest != "rest" {
			t.Errorf("the answer took more than its line: %q left", rest)
		}
	}
}
