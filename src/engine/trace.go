package engine

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// EnvTrace turns on timing traces: HOBBS_TRACE=1 writes one line per engine
// call and per launcher phase to stderr, with milliseconds since the process
// started. For measuring where a session's start-up and teardown time goes.
const EnvTrace = "HOBBS_TRACE"

var (
	traceOn    = os.Getenv(EnvTrace) != ""
	traceStart = time.Now()
	traceMu    sync.Mutex
)

// Tracef writes one trace line when HOBBS_TRACE is set.
func Tracef(format string, args ...any) {
	if !traceOn {
		return
	}
	traceMu.Lock()
	defer traceMu.Unlock()
	fmt.Fprintf(os.Stderr, "hobbs-trace %6dms %s\n", time.Since(traceStart).Milliseconds(), fmt.Sprintf(format, args...))
}

// TraceCall returns a func that traces the end of a CLI call begun now.
func TraceCall(args []string) func(err error) {
	if !traceOn {
		return func(error) {}
	}
	t0 := time.Now()
	what := callName(args)
	return func(err error) {
		st := "ok"
		if err != nil {
			st = "err"
		}
		Tracef("call %-40s %5dms (from %dms) %s", what, time.Since(t0).Milliseconds(), t0.Sub(traceStart).Milliseconds(), st)
	}
}

// callName is a short name for a CLI call: the subcommand words and the last
// argument (usually the object).
func callName(args []string) string {
	var words []string
	for i, a := range args {
		if strings.HasPrefix(a, "-") || i > 1 {
			break
		}
		words = append(words, a)
	}
	if n := len(args); n > len(words) {
		words = append(words, "… "+args[n-1])
	}
	return strings.Join(words, " ")
}
