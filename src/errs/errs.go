// Package errs defines Hobbs's errors and the one table of process exit
// codes. Domain packages return errors built here so that the command layer can
// turn any failure into the right exit code and an actionable hint without
// knowing where it came from.
//
// A domain package never words a hint. It names the situation (a Kind it
// declares, in its kinds.go) and the facts a hint needs
// (Advise); the command layer holds the words for every kind
// (cmd/hobbs/hints_*.go) and renders them in one function (hints.go).
//
// Exit codes (documented for users in docs/cli.md):
//
//	0   OK           success
//	1   Failure      the operation failed (default for any error)
//	2   Usage        bad usage, bad flags or arguments, invalid config or input file
//	3   Missing      a dependency is missing (docker engine, a key, the instance)
//	124 Timeout      an operation timed out
//	130 Interrupted  interrupted by SIGINT/SIGTERM
package errs

import (
	"errors"
	"fmt"
)

// Exit codes. Keep in sync with docs/cli.md (a test checks it).
const (
	OK          = 0
	Failure     = 1
	Usage       = 2
	Missing     = 3
	Timeout     = 124
	Interrupted = 130
)

// Kind names a situation the user can act on, as data: "vault.no-identity".
// Domain packages declare their kinds as constants; the command layer maps
// each to the words of a hint. A kind's text is its package's name, a dot,
// and a few words in kebab-case.
type Kind string

// Facts are what the words of a hint need (a name, a path, a list), by name.
type Facts map[string]string

// Advice is the next step for the user, as data: a kind and its facts. The
// zero Advice advises nothing.
type Advice struct {
	Kind  Kind
	Facts Facts
}

// NewAdvice makes an Advice of k and kv, read as name, value pairs.
func NewAdvice(k Kind, kv ...string) Advice {
	a := Advice{Kind: k}
	if len(kv) > 0 {
		a.Facts = make(Facts, len(kv)/2)
		for i := 0; i+1 < len(kv); i += 2 {
			a.Facts[kv[i]] = kv[i+1]
		}
	}
	return a
}

// IsZero reports whether a advises nothing.
func (a Advice) IsZero() bool { return a.Kind == "" }

// Error is an error with an exit code and, optionally, advice: what the
// user can do about it, as data the command layer words.
type Error struct {
	Code   int
	Msg    string
	Err    error // wrapped cause, may be nil
	Advice Advice
}

func (e *Error) Error() string {
	switch {
	case e.Msg == "" && e.Err != nil:
		return e.Err.Error()
	case e.Err != nil:
		return e.Msg + ": " + e.Err.Error()
	default:
		return e.Msg
	}
}

func (e *Error) Unwrap() error { return e.Err }

func newf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// Usagef reports bad usage or invalid input (exit 2).
func Usagef(format string, args ...any) *Error { return newf(Usage, format, args...) }

// Missingf reports a missing dependency (exit 3).
func Missingf(format string, args ...any) *Error { return newf(Missing, format, args...) }

// Failf reports a failed operation (exit 1).
func Failf(format string, args ...any) *Error { return newf(Failure, format, args...) }

// Wrap attaches code and message to err. A nil err stays nil.
func Wrap(code int, err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...), Err: err}
}

// Advise returns e with its advice set to kind k and the facts kv (name,
// value pairs). It is meant for chaining:
// errs.Usagef("bad name %q", n).Advise(playbook.BadName, "name", n).
func (e *Error) Advise(k Kind, kv ...string) *Error {
	e.Advice = NewAdvice(k, kv...)
	return e
}

// AdviceOf returns the first advice found in err's chain, or the zero
// Advice.
func AdviceOf(err error) Advice {
	for err != nil {
		var e *Error
		if !errors.As(err, &e) {
			return Advice{}
		}
		if !e.Advice.IsZero() {
			return e.Advice
		}
		err = e.Err
	}
	return Advice{}
}

// Code returns the exit code for err: 0 for nil, the code of the outermost
// *Error in the chain, or Failure.
func Code(err error) int {
	if err == nil {
		return OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Failure
}
