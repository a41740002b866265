// Command gotest runs `go test -json ARGS...` and prints its progress as
// it comes: a line per package as it finishes (ok, FAIL, or no test
// files, as go test prints them), a line per top-level test that took
// longer than a few seconds as it ends (the end-to-end suite runs for
// minutes as one package), and in full the output of every test and
// package that failed, of every build that failed, and of every line that
// is not go test's JSON. It exits with go test's exit status, and with 1
// when go test exited 0 yet a test failed. make test runs the suite
// through it (Makefile).
//
// Usage: go run ./tests/gotest [go test flags] PACKAGES...
//
// It runs the go command $GOTEST_GO names (make's $(GO)), else go.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// slowTest is how long a top-level test runs before its end gets a line.
const slowTest = 5 * time.Second

// event is one line of go test -json (cmd/test2json), and of its build
// output.
type event struct {
	Action     string
	Package    string
	ImportPath string
	Test       string
	Elapsed    float64
	Output     string
}

func main() { os.Exit(run("", os.Args[1:], os.Stdout, os.Stderr)) }

// run runs go test -json args in dir ("": here) and returns the exit
// status gotest exits with.
func run(dir string, args []string, stdout, stderr io.Writer) int {
	goCmd := os.Getenv("GOTEST_GO")
	if goCmd == "" {
		goCmd = "go"
	}
	cmd := exec.Command(goCmd, append([]string{"test", "-json"}, args...)...)
	cmd.Dir, cmd.Stdin, cmd.Stderr = dir, os.Stdin, stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(stderr, "gotest:", err)
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(stderr, "gotest:", err)
		return 1
	}
	failed := format(out, stdout)
	err = cmd.Wait()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode()
	case err != nil:
		fmt.Fprintln(stderr, "gotest:", err)
		return 1
	case failed:
		fmt.Fprintln(stderr, "gotest: a test failed, yet go test exited 0")
		return 1
	}
	return 0
}

// format reads go test -json from r and writes the progress to w; it
// reports whether a test, package or build failed.
func format(r io.Reader, w io.Writer) (failed bool) {
	type key struct{ pkg, test string }
	buf := map[key]*strings.Builder{} // the output of each running top-level test and package
	get := func(k key) *strings.Builder {
		b := buf[k]
		if b == nil {
			b = &strings.Builder{}
			buf[k] = b
		}
		return b
	}
	summary := map[string]string{} // each package's end line, until its end
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		var e event
		if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &e) != nil {
			fmt.Fprintln(w, line) // not go test's JSON: shown as it is
			continue
		}
		top, _, _ := strings.Cut(e.Test, "/")
		k := key{e.Package, top}
		switch e.Action {
		case "build-output":
			fmt.Fprint(w, e.Output)
		case "build-fail":
			failed = true
		case "output":
			if e.Test == "" && isSummary(e.Output) {
				summary[e.Package] += e.Output // ok, FAIL, ? lines: printed at the package's end
				continue
			}
			get(k).WriteString(e.Output)
		case "pass", "skip":
			if e.Test == "" {
				// The package's own output (a TestMain's lines) is kept
				// for a failure; a passing package says "ok" only.
				delete(buf, k)
				fmt.Fprint(w, summary[e.Package])
				delete(summary, e.Package)
				continue
			}
			if e.Test == top && e.Action == "pass" && e.Elapsed >= slowTest.Seconds() {
				fmt.Fprintf(w, "    ok    %s %s (%.1fs)\n", e.Package, e.Test, e.Elapsed)
			}
			if e.Test == top {
				delete(buf, k)
			}
		case "fail":
			failed = true
			if e.Test != "" && e.Test != top {
				continue // the top-level test's failure prints all of it
			}
			if e.Test == "" {
				// Whatever is left: the package's output, and tests that
				// never ended (a panic, a timeout).
				for bk, b := range buf {
					if bk.pkg == e.Package && bk.test != "" {
						fmt.Fprint(w, b.String())
						delete(buf, bk)
					}
				}
			}
			if b := buf[k]; b != nil {
				fmt.Fprint(w, b.String())
				delete(buf, k)
			}
			if e.Test == "" {
				fmt.Fprint(w, summary[e.Package])
				delete(summary, e.Package)
			}
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(w, "gotest: reading go test's output:", err)
		failed = true
	}
	for _, s := range summary {
		fmt.Fprint(w, s)
	}
	for _, b := range buf { // output of a go test that ended mid-way
		if s := b.String(); strings.Contains(s, "FAIL") || strings.Contains(s, "panic") {
			fmt.Fprint(w, s)
		}
	}
	return failed
}

// isSummary reports whether a package's output line is go test's line
// for the package's end: "ok  \tpkg\t1.2s", "FAIL\tpkg\t…", "?   \tpkg\t[no
// test files]".
func isSummary(s string) bool {
	for _, p := range []string{"ok  \t", "FAIL\t", "?   \t"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
