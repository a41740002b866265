package main

// The CLI's behaviour is specified by the testscript scenarios in
// tests/script/*.txtar. Each runs in its own $WORK with HOME, XDG_* and
// HOBBS_HOME inside it; the hobbs command runs this package's Main in a
// child process of the test binary. The docker the scenarios find is
// fakeEngine: they never need a container engine (sessions on a real one
// are the e2e suite's, tests/e2e).

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/hobbs-agent/hobbs/src/tooltest"
	"github.com/hobbs-agent/hobbs/src/vault"
)

// testScryptWorkFactor is the scrypt cost of the identities the scenarios'
// hobbs protects with a passphrase; a hobbs that is not a test binary always
// uses vault.ScryptWorkFactor (TestPassphraseIdentityCost).
const testScryptWorkFactor = 10

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"hobbs": func() {
			vault.SetTestScryptWorkFactor(testScryptWorkFactor)
			os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
		},
		"maxrss": func() { os.Exit(maxRSSMain(os.Args[1:])) }, // bounded_script_test.go
	})
}

// fakeEngine is the docker of the scenarios: a reachable engine that
// answers the version queries (doctor's engine checks, hobbs build's first
// steps), has every image asked about (doctor's image check), each with
// claude on its PATH (doctor --deep), and fails every other command, as for
// an object it does not have. It is a shell script, first on each
// scenario's PATH: the scenarios call it hundreds of times, and starting
// sh costs a tenth of starting this test binary.
var fakeEngine = `#!/bin/sh
# FAKE engine of the hobbs scenarios (cmd/hobbs/script_test.go).
if [ $# -eq 3 ] && [ "$1" = version ] && [ "$2" = --format ]; then
	case "$3" in
	'{{.Server.Version}}') echo 27.0.0; exit 0 ;;
	'{{.Server.Arch}}') echo ` + runtime.GOARCH + `; exit 0 ;;
	esac
fi
if [ $# -eq 5 ] && [ "$1" = image ] && [ "$2" = inspect ] && [ "$3" = --format ]; then
	case "$4" in
	'{{.Id}}') echo sha256:fake; exit 0 ;;
	'{{.Id}} {{json .Config.Labels}}') echo 'sha256:fake null'; exit 0 ;;
	esac
fi
if [ $# -gt 2 ] && [ "$1" = run ]; then
	eval "last=\${$#}"
	if [ "$last" = "command -v claude || exit 9" ]; then
		echo /usr/local/bin/claude
		exit 0
	fi
fi
echo "Error: No such object: the scenarios' engine only answers version queries (docker $*)" >&2
exit 1
`

// scriptCmds are the custom commands available to every scenario.
var scriptCmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	"fileperm":   cmdFileperm,
	"jsonq":      cmdJSONQ,
	"waitfile":   cmdWaitfile,
	"countlines": cmdCountLines,
	"require":    cmdRequire,
	// memory_script_test.go
	"stdoutvar": cmdStdoutVar,
	"memgen":    cmdMemgen,
	"hookfits":  cmdHookFits,
	// playbook_script_test.go
	"today": cmdToday,
	// vault_script_test.go
	"vaultcrash":   cmdVaultCrash,
	"exactly":      cmdExactly,
	"treecontains": cmdTreeContains,
	"ptyrun":       cmdPtyRun,
	// proxy_script_test.go
	"httptarget": cmdHTTPTarget,
	"targethits": cmdTargetHits,
	"freeport":   cmdFreePort,
	"waitproxy":  cmdWaitProxy,
	"waitgrep":   cmdWaitGrep,
	"pause":      cmdPause,
	// termsafe_test.go
	"unescape": cmdUnescape,
	// review_script_test.go
	"provsession": cmdProvSession,
}

func TestScripts(t *testing.T) {
	testscript.Run(t, scriptParams("../../tests/script"))
}

// scriptParams is the shared testscript setup; other test files reuse it for
// their own script directories.
func scriptParams(dir string) testscript.Params {
	return testscript.Params{
		Dir:                 dir,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Cmds:                scriptCmds,
		Setup:               setupScriptEnv,
		UpdateScripts:       os.Getenv("UPDATE_SCRIPTS") == "1",
	}
}

func setupScriptEnv(env *testscript.Env) error {
	work := env.WorkDir
	home := filepath.Join(work, "home")
	vars := map[string]string{
		"HOME":            home,
		"USER":            "tester",
		"XDG_DATA_HOME":   filepath.Join(home, ".local", "share"),
		"XDG_CONFIG_HOME": filepath.Join(home, ".config"),
		"XDG_CACHE_HOME":  filepath.Join(home, ".cache"),
		"XDG_STATE_HOME":  filepath.Join(home, ".local", "state"),
		"HOBBS_HOME":      filepath.Join(work, "hobbs"),
		"HOBBS_CONTEXT":   "",
		"HOBBS_DOCKER":    "", // docker: fakeEngine, first on PATH
		"NO_COLOR":        "1",
	}
	for k, v := range vars {
		env.Setenv(k, v)
	}
	if v := os.Getenv("CI"); v != "" {
		env.Setenv("CI", v) // for require
	}
	engine := filepath.Join(work, ".engine")
	if err := os.MkdirAll(engine, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(engine, "docker"), []byte(fakeEngine), 0o755); err != nil {
		return err
	}
	env.Setenv("PATH", engine+string(filepath.ListSeparator)+env.Getenv("PATH"))
	return os.MkdirAll(home, 0o755)
}

// fileperm PATH MODE: assert PATH's permission bits equal octal MODE.
func cmdFileperm(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: fileperm PATH MODE")
	}
	want, err := strconv.ParseUint(args[1], 8, 32)
	ts.Check(err)
	fi, err := os.Stat(ts.MkAbs(args[0]))
	ts.Check(err)
	got := uint64(fi.Mode().Perm())
	if (got == want) == neg {
		ts.Fatalf("%s: mode %04o, want %s%04o", args[0], got, map[bool]string{true: "not ", false: ""}[neg], want)
	}
}

// jsonq FILE|stdout PATH [WANT]: read JSON (a document, or JSON lines: the
// last line), follow a dotted PATH (".a.b", ".items.0.id", "." for the root,
// "#" as the last element for a length), and assert it equals WANT (compared as
// its JSON text, or as the plain string for strings). Without WANT it asserts
// the path exists.
func cmdJSONQ(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: jsonq FILE|stdout PATH [WANT]")
	}
	data := ts.ReadFile(args[0]) // a file, or stdout or stderr
	var v any
	if err := json.Unmarshal([]byte(data), &v); err != nil {
		lines := strings.Split(strings.TrimSpace(data), "\n")
		if err2 := json.Unmarshal([]byte(lines[len(lines)-1]), &v); err2 != nil {
			ts.Fatalf("%s: not JSON: %v", args[0], err)
		}
	}
	got, ok := jsonPath(v, args[1])
	if len(args) == 2 {
		if ok == neg {
			ts.Fatalf("path %s: exists=%v", args[1], ok)
		}
		return
	}
	if !ok {
		if !neg {
			ts.Fatalf("path %s not found in %s", args[1], args[0])
		}
		return
	}
	text := ""
	if s, isStr := got.(string); isStr {
		text = s
	} else {
		b, _ := json.Marshal(got)
		text = string(b)
	}
	if (text == args[2]) == neg {
		ts.Fatalf("path %s = %s, want %s%s", args[1], text, map[bool]string{true: "not ", false: ""}[neg], args[2])
	}
}

func jsonPath(v any, path string) (any, bool) {
	path = strings.TrimPrefix(path, ".")
	if path == "" {
		return v, true
	}
	for _, part := range strings.Split(path, ".") {
		if part == "length()" {
			switch x := v.(type) {
			case []any:
				return float64(len(x)), true
			case map[string]any:
				return float64(len(x)), true
			}
			return nil, false
		}
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[part]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// waitfile PATH [SECONDS]: wait until PATH exists (default 10 s).
func cmdWaitfile(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 {
		ts.Fatalf("usage: waitfile PATH [SECONDS]")
	}
	limit := 10 * time.Second
	if len(args) > 1 {
		s, err := strconv.Atoi(args[1])
		ts.Check(err)
		limit = time.Duration(s) * time.Second
	}
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(ts.MkAbs(args[0])); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	ts.Fatalf("%s did not appear within %v", args[0], limit)
}

// countlines FILE N: assert FILE has exactly N lines.
func cmdCountLines(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: countlines FILE N")
	}
	data := ts.ReadFile(args[0])
	n := strings.Count(data, "\n")
	if data != "" && !strings.HasSuffix(data, "\n") {
		n++
	}
	if (fmt.Sprint(n) == args[1]) == neg {
		ts.Fatalf("%s has %d lines, want %s", args[0], n, args[1])
	}
}

// require TOOL...: in CI, which installs every tool the scenarios use (see
// .ci/run), a missing one fails the scenario. Elsewhere the skip is noted
// (tooltest.Note: make test lists it at its end), and the scenario's
// "[!exec:TOOL] skip" or "[exec:TOOL]" conditions skip what needs the tool.
func cmdRequire(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: require TOOL...")
	}
	for _, tool := range args {
		if _, err := exec.LookPath(tool); err != nil {
			if tooltest.InCI() {
				ts.Fatalf("%s not found; CI installs it (.ci/run): %s", tool, tooltest.Install(tool))
			}
			name := strings.TrimPrefix(filepath.Base(ts.Getenv("WORK")), "script-")
			tooltest.Note("TestScripts/"+name, tool+" not installed (the steps that need it)", tooltest.Install(tool))
		}
	}
}
