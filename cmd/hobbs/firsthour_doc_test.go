package main

import (
	"os"
	"strings"
	"testing"

	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/runner"
)

// TestFirstHourDocStatements holds the statements of docs/setup.md,
// docs/cli.md and doctor's help that a new user's first hour found false
// (issue 47) to what the commands do; each behaviour's own test is named.
func TestFirstHourDocStatements(t *testing.T) {
	read := func(p string) string {
		t.Helper()
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(strings.Fields(string(b)), " ")
	}
	setup, cli := read("../../docs/setup.md"), read("../../docs/cli.md")

	// setup.md: the first run asks the questions (TestFirstRunOnTerminal),
	// its build is two lines (TestNoClaudeCode), no timing claim without a
	// measurement, and a base without Claude Code is said everywhere.
	for _, want := range []string{"on a terminal it first asks the three foundation questions",
		"That build prints two lines, where it starts and how it ended",
		"`hobbs run`, `hobbs chat` and `hobbs playbook run` (exit 3, before any container starts) and `hobbs doctor`"} {
		if !strings.Contains(setup, want) {
			t.Errorf("docs/setup.md no longer says %q", want)
		}
	}
	if strings.Contains(setup, "a minute or two") {
		t.Error("docs/setup.md times the offline base without a measurement")
	}
	if b := (runner.Runner{Config: config.Default()}).Runtime(runner.SessionOptions{}).Build; b == nil || !b.Brief {
		t.Error("a run's build shows a line per step, where docs/setup.md says two lines")
	}

	// doctor's help and cli.md: --deep looks for claude; Claude Code
	// missing from the image is a missing dependency (exit 3) in both
	// (doctor_image.txtar).
	var help strings.Builder
	Main([]string{"doctor", "--help"}, strings.NewReader(""), &help, &help)
	h := strings.Join(strings.Fields(help.String()), " ")
	for _, want := range []string{"to check that claude is on its PATH", "Claude Code in the image"} {
		if !strings.Contains(h, want) {
			t.Errorf("doctor --help no longer says %q", want)
		}
	}
	if !strings.Contains(cli, "the runtime base image, Claude Code in the image), 1 otherwise") {
		t.Error("docs/cli.md's doctor exit codes do not name Claude Code in the image")
	}

	// cli.md: status on stderr, data on stdout; hobbs review with nothing
	// waiting prints nothing on stdout (review.txtar).
	if !strings.Contains(cli, "Data on stdout, everything else on stderr.") {
		t.Fatal("docs/cli.md no longer states where status goes")
	}
	t.Setenv("HOBBS_HOME", t.TempDir())
	var out, errOut strings.Builder
	if code := Main([]string{"init", "--no-input"}, strings.NewReader(""), &out, &errOut); code != 0 {
		t.Fatalf("init: %d %s", code, errOut.String())
	}
	out.Reset()
	errOut.Reset()
	if code := Main([]string{"review"}, strings.NewReader(""), &out, &errOut); code != 0 || out.Len() != 0 || !strings.Contains(errOut.String(), "nothing waits") {
		t.Errorf("hobbs review with nothing waiting: exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}

	// The docs name the verbs the commands have (verbs.txtar); an older
	// name appears only as such.
	docs := setup + cli + read("../../docs/memory.md") + read("../../docs/playbooks.md") + read("../../docs/serve.md")
	if strings.Contains(docs, "hobbs memory forget") {
		t.Error("the docs name hobbs memory forget, whose name is now hobbs memory rm")
	}
	for rest := docs; ; {
		j := strings.Index(rest, "task review ID --approve")
		if j < 0 {
			break
		}
		if !strings.Contains(strings.ToLower(rest[max(0, j-120):j]), "older") {
			t.Errorf("the docs name hobbs task review ID --approve other than as the older form of hobbs task approve: …%s…", rest[max(0, j-60):j+30])
		}
		rest = rest[j+1:]
	}
}
