// Package errs defines Hobbs's error kinds and the one table of process exit
// codes. Domain packages return errors built here so that the command layer can
// turn any failure into the right exit code and an actionable hint without
// knowing where it came from.
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

// Error is an error with an exit code and an optional hint telling the user
// what to do about it.
type Error struct {
	Code int
	Msg  string
	Hint string
	Err  error // wrapped cause, may be nil
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

// WithHint returns e with a hint set. It is meant for chaining:
// errs.Usagef("bad name %q", n).WithHint("names are kebab-case").
func (e *Error) WithHint(format string, args ...any) *Error {
	e.Hint = fmt.Sprintf(format, args...)
	return e
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

// Hint returns the first hint found in err's chain, or "".
func Hint(err error) string {
	for err != nil {
		var e *Error
		if !errors.As(err, &e) {
			return ""
		}
		if e.Hint != "" {
			return e.Hint
		}
		err = e.Err
	}
	return ""
}
