// Command hobbs is the Hobbs launcher, the toolkit the agent calls inside its
// container, and the egress proxy — one static binary.
//
// This package is thin: flags, output and wiring. Logic lives in src/<domain>.
// Each command noun has its own file; newRoot assembles the tree.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/image"
	"github.com/hobbs-agent/hobbs/src/schedule"
	"github.com/hobbs-agent/hobbs/src/termsafe"
)

func main() {
	os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// app is what every command gets: streams, global flags, and lazy access to
// the instance, its config and its audit log.
type app struct {
	ctx         context.Context
	in          io.Reader
	out, errOut io.Writer
	// rawOut and rawErr are stdout and stderr exactly as Main got them. On
	// a terminal, out and errOut escape control characters (termsafe: text
	// from the instance, which the agent writes, must not drive the user's
	// terminal); to a pipe or a file they are the same streams. Use the raw
	// ones only for bytes that must reach a terminal unchanged: a secret
	// printed by vault get.
	rawOut, rawErr io.Writer
	instanceFlag   string
	// problems reports what the command's store could not read; see
	// reportProblems.
	problems func()
}

// terminalCommands hand the terminal to the agent's session, whose own
// interface draws with escape sequences: they get the raw streams (and
// decide about a terminal from them).
var terminalCommands = map[string]bool{"hobbs run": true, "hobbs attach": true}

// quietCommands do not report missed scheduled runs (schedule.MissedRuns),
// which every other command does: the proxy and the session's
// environment run in containers, schedule and doctor show them
// themselves.
var quietCommands = map[string]bool{"proxy": true, "session-env": true, "completion": true, "__complete": true,
	"version": true, "schedule": true, "doctor": true}

// backupCommands report their own outcome: no warning of a failed
// backup after them (warnBackup).
var backupCommands = map[string]bool{"backup": true, "restore": true, "sync": true}

// Main runs hobbs with args and returns the process exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rawOut, rawErr := stdout, stderr
	stdout, stderr = termsafe.Wrap(stdout), termsafe.Wrap(stderr)
	defer termsafe.Flush(stderr)
	defer termsafe.Flush(stdout)
	a := &app{ctx: ctx, in: stdin, out: stdout, errOut: stderr, rawOut: rawOut, rawErr: rawErr}
	root := newRoot(a)
	if c, _, err := root.Find(args); err == nil && terminalCommands[c.CommandPath()] {
		stdout, stderr = rawOut, rawErr
		a.out, a.errOut = rawOut, rawErr
	}
	if c, _, err := root.Find(args); err == nil && !quietCommands[strings.Fields(c.CommandPath() + " x")[1]] {
		a.warnMissed(schedule.MissedRuns(schedule.OptionsFromEnv(nil), time.Now()))
	}
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if c, _, ferr := root.Find(args); ferr == nil && !quietCommands[strings.Fields(c.CommandPath() + " x")[1]] && !backupCommands[strings.Fields(c.CommandPath() + " x")[1]] {
		a.warnBackup()
	}
	if err == nil {
		return errs.OK
	}
	code := exitCode(err)
	if code == errs.Interrupted || ctx.Err() != nil {
		fmt.Fprintln(stderr, "hobbs: interrupted")
		return errs.Interrupted
	}
	var status exitStatus
	if errors.As(err, &status) { // another process's exit code (hobbs run)
		return int(status)
	}
	report(stderr, root, args, err, hintOf)
	return code
}

// newRoot builds the command tree: every top-level command, grouped by
// where it runs, each built by its noun's file.
func newRoot(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "hobbs",
		Short: "Hobbs: a containerised personal agent built on Claude Code",
		Long: `Hobbs runs Claude Code as your personal agent in a locked-down container.

On the host, hobbs sets up your instance (init), builds the image (build) and
starts sessions behind an allowlist egress proxy (run). Inside the container,
the agent uses the same binary to keep memory, playbooks and secrets.

Your data lives in the instance directory: $XDG_DATA_HOME/hobbs by default,
HOBBS_HOME or --instance to choose another.`,
		Example: `  hobbs init                 # create your instance
  hobbs doctor               # check everything is in place
  hobbs run                  # start a session in ~/hobbs-workspace`,
		SilenceErrors:     true,
		SilenceUsage:      true,
		DisableAutoGenTag: true,
		Version:           image.BuildVersion("").String(), // --version prints what hobbs version prints
	}
	root.SetVersionTemplate("hobbs {{.Version}}\n")
	root.PersistentFlags().StringVar(&a.instanceFlag, "instance", "", "instance directory (default $HOBBS_HOME or $XDG_DATA_HOME/hobbs)")
	// On the host: set up the instance, check it, run sessions.
	root.AddCommand(newInitCmd(a), newDoctorCmd(a), newConfigCmd(a), newPolicyCmd(a))
	root.AddCommand(newBuildCmd(a), newPruneCmd(a), newRunCmd(a), newPsCmd(a), newAttachCmd(a), newExecCmd(a), newLogsCmd(a), newStopCmd(a))
	root.AddCommand(newScheduleCmd(a), newReviewCmd(a), newChatCmd(a), newServeCmd(a))
	root.AddCommand(newApprovalsCmd(a))
	root.AddCommand(newBackupCmd(a), newRestoreCmd(a))
	root.AddCommand(newSyncCmd(a))
	// The toolkit the agent uses in its container (and you on the host).
	root.AddCommand(newMemoryCmd(a), newPlaybookCmd(a), newAgentCmd(a), newTaskCmd(a), newVaultCmd(a))
	// What the images run: the egress proxy and the session's environment.
	root.AddCommand(newProxyCmd(a), newSessionEnvCmd(a))
	root.AddCommand(newVersionCmd(a))
	setupTree(root)
	return root
}

// stdinIsTTY reports whether stdin is an interactive terminal.
func (a *app) stdinIsTTY() bool {
	f, ok := a.in.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// onTerminal reports whether stdin and stdout are both a terminal (stdout
// itself, not through termsafe: the commands that hand the terminal on).
func (a *app) onTerminal() bool {
	f, ok := a.out.(*os.File)
	return a.stdinIsTTY() && ok && term.IsTerminal(int(f.Fd()))
}

// textArg returns the text given as arguments (joined by spaces), or read
// from stdin when the only argument is "-", or when there is none and stdin
// is not a terminal. what names the text in the error when there is none.
func (a *app) textArg(args []string, what string) (string, error) {
	if len(args) == 1 && args[0] == "-" || len(args) == 0 && !a.stdinIsTTY() {
		b, err := a.readStdin()
		return string(b), err
	}
	if len(args) == 0 {
		return "", withHint(errs.Usagef("no %s", what), "give it as an argument, or pipe it and use -")
	}
	return strings.Join(args, " "), nil
}

// readFileFlag reads the file named by the value of flag, "-" meaning stdin.
func (a *app) readFileFlag(flag, name string) ([]byte, error) {
	switch name {
	case "":
		return nil, errs.Usagef("%s needs a file name, or - for stdin", flag)
	case "-":
		return a.readStdin()
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, errs.Wrap(errs.Usage, err, "read %s", name)
	}
	return b, nil
}

func (a *app) readStdin() ([]byte, error) {
	b, err := io.ReadAll(a.in)
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "read stdin")
	}
	return b, nil
}
