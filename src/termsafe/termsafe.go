// Package termsafe keeps text Hobbs did not write from driving the user's
// terminal. Memory text, playbooks, task logs, file names: much of what
// the CLI prints comes from the instance, which the agent's container can
// write. A terminal acts on control characters: an escape sequence can
// rewrite the screen, set the window title, put text on the clipboard (OSC
// 52), or, on some terminals, answer with input of its own. Printed to a
// terminal, such text must show its control characters, not send them.
//
// Writer does that for a whole stream: the command layer wraps its stdout
// and stderr with Wrap, which wraps only a terminal, so output to a pipe or
// a file (JSON, a hook's output) stays exactly as written.
//
// Escaped are the C0 controls except newline and tab (as \xHH: ESC is
// \x1b, BEL \x07, CR \x0d), DEL (\x7f), the C1 controls U+0080 to U+009F
// (as \u0080 to \u009f: U+009B is a CSI on its own), and every byte that is
// not part of valid UTF-8 (as \xHH: a lone 0x9b is a CSI to a terminal in
// an 8-bit mode). Everything else, any printable Unicode text, passes
// unchanged. A backslash is not escaped: the output is for reading, not
// for parsing back.
package termsafe

import (
	"io"
	"os"
	"sync"
	"unicode/utf8"

	"golang.org/x/term"
)

const hex = "0123456789abcdef"

// needs reports whether byte c may need escaping or decoding (control
// characters and everything outside ASCII).
func needs(c byte) bool { return c < 0x20 && c != '\n' && c != '\t' || c >= 0x7f }

// Append appends p to dst with its control characters escaped. An
// incomplete UTF-8 sequence at the end of p is escaped as invalid.
func Append(dst, p []byte) []byte {
	dst, rest := appendComplete(dst, p)
	for _, c := range rest {
		dst = appendByte(dst, c)
	}
	return dst
}

func appendByte(dst []byte, c byte) []byte {
	return append(dst, '\\', 'x', hex[c>>4], hex[c&15])
}

// appendComplete escapes p into dst, except for an incomplete UTF-8
// sequence at its very end, which it returns (for the next write to
// complete).
func appendComplete(dst, p []byte) ([]byte, []byte) {
	start := 0 // p[start:i] is still to be copied as it is
	for i := 0; i < len(p); {
		c := p[i]
		if !needs(c) {
			i++
			continue
		}
		if c < 0x80 { // C0 or DEL
			dst = appendByte(append(dst, p[start:i]...), c)
			i++
			start = i
			continue
		}
		if !utf8.FullRune(p[i:]) { // a sequence cut at the end
			return append(dst, p[start:i]...), p[i:]
		}
		r, size := utf8.DecodeRune(p[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = appendByte(append(dst, p[start:i]...), c)
		case r >= 0x80 && r <= 0x9f:
			dst = append(append(dst, p[start:i]...), '\\', 'u', '0', '0', hex[r>>4], hex[r&15])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(dst, p[start:]...), nil
}

// Writer escapes the control characters of everything written to it (see
// the package doc) before writing it to the stream it wraps. A UTF-8
// sequence split between two writes is put back together; Flush writes a
// sequence left incomplete at the end. It is safe for concurrent use.
type Writer struct {
	mu      sync.Mutex
	w       io.Writer
	pending []byte // an incomplete UTF-8 sequence ending the last write
	buf     []byte
}

// NewWriter returns a Writer escaping into w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write escapes p and writes it; it returns len(p) when the escaped text
// was written whole.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	in := p
	if len(w.pending) > 0 {
		in = append(w.pending, p...)
		w.pending = nil
	}
	var rest []byte
	w.buf, rest = appendComplete(w.buf[:0], in)
	w.pending = append(w.pending[:0:0], rest...)
	if len(in) != len(p) {
		clear(in) // a copy of p
	}
	var err error
	if len(w.buf) > 0 {
		_, err = w.w.Write(w.buf)
	}
	clear(w.buf) // what passed through (a secret, perhaps) is not kept
	if cap(w.buf) > 64<<10 {
		w.buf = nil // nor a large buffer for the process's life
	}
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes an incomplete UTF-8 sequence left by the last write,
// escaped as invalid bytes.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.pending) == 0 {
		return nil
	}
	b := Append(nil, w.pending)
	w.pending = nil
	_, err := w.w.Write(b)
	return err
}

// Unwrap returns the stream w writes to.
func (w *Writer) Unwrap() io.Writer { return w.w }

// IsTerminal reports whether w is an *os.File open on a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && f != nil && term.IsTerminal(int(f.Fd()))
}

// Wrap returns a Writer around w when w is a terminal, and w itself
// otherwise (a pipe or a file gets the bytes exactly as written).
func Wrap(w io.Writer) io.Writer {
	if IsTerminal(w) {
		return NewWriter(w)
	}
	return w
}

// Flush flushes w if it is a *Writer (see Writer.Flush).
func Flush(w io.Writer) error {
	if tw, ok := w.(*Writer); ok {
		return tw.Flush()
	}
	return nil
}
