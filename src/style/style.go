// Package style is how Hobbs's own words look: on a terminal, colour for
// ok, warnings, failures and hints; everywhere, counted nouns in the right
// number ("1 check", "2 checks"). Every command and domain package uses it,
// so the output reads the same throughout.
//
// Colour goes only to a terminal (the stream itself, or the one a
// termsafe.Writer wraps), and never when NO_COLOR is set to anything
// (https://no-color.org) or TERM is "dumb". The colour codes are written to
// the terminal directly; the coloured text itself goes through the writer
// it was given, so text from the instance is still escaped by termsafe.
package style

import (
	"fmt"
	"io"
	"os"

	"github.com/hobbs-agent/hobbs/src/termsafe"
)

// Kind is what a word says: it picks the colour.
type Kind int

const (
	OK   Kind = iota // green: a check passed, something was done
	Warn             // yellow: a warning, something skipped
	Fail             // red: a failure, an error
	Hint             // cyan: the next step
)

// sgr are the Select Graphic Rendition codes of each kind.
var sgr = map[Kind]string{OK: "\x1b[32m", Warn: "\x1b[33m", Fail: "\x1b[31m", Hint: "\x1b[36m"}

const reset = "\x1b[0m"

// Terminal is the terminal w writes to, or nil: w itself, or the stream a
// termsafe.Writer (or another writer with Unwrap) wraps. Control sequences
// Hobbs writes itself (colour, rewriting a progress line) go to it; text
// goes through w.
func Terminal(w io.Writer) *os.File {
	if f, ok := terminal(w).(*os.File); ok {
		return f
	}
	return nil
}

func terminal(w io.Writer) io.Writer {
	for w != nil {
		if termsafe.IsTerminal(w) {
			return w
		}
		u, ok := w.(interface{ Unwrap() io.Writer })
		if !ok {
			return nil
		}
		w = u.Unwrap()
	}
	return nil
}

// On reports whether text written to w is coloured: w is a terminal,
// NO_COLOR is unset or empty, and TERM is not "dumb".
func On(w io.Writer) bool {
	return os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb" && terminal(w) != nil
}

// Fprint writes text to w, in k's colour when On(w).
func Fprint(w io.Writer, k Kind, text string) {
	if !On(w) {
		fmt.Fprint(w, text)
		return
	}
	t := terminal(w)
	fmt.Fprint(t, sgr[k])
	fmt.Fprint(w, text)
	fmt.Fprint(t, reset)
}

// N is n and the noun in the number n needs: "1 check", "0 checks",
// "2 entries".
func N(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
