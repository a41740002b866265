package main

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// exitCode maps errors to exit codes: its own, cobra's usage errors, a lock
// held by another process.
func TestErrorExitCodes(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "x.lock")
	unlock, err := safefile.Lock(lock, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	_, held := safefile.Lock(lock, 20*time.Millisecond)
	if !errors.Is(held, safefile.ErrLockTimeout) {
		t.Fatalf("second lock: %v", held)
	}
	for _, c := range []struct {
		name string
		err  error
		want int
	}{
		{"usage", errs.Usagef("bad"), errs.Usage},
		{"missing", errs.Missingf("no docker"), errs.Missing},
		{"wrapped failure", fmt.Errorf("ctx: %w", errs.Failf("broke")), errs.Failure},
		{"plain error", errors.New("disk full"), errs.Failure},
		{"cobra unknown command", errors.New(`unknown command "x" for "hobbs"`), errs.Usage},
		{"cobra arg count", errors.New("accepts 1 arg(s), received 2"), errs.Usage},
		{"lock held, bare", held, errs.Timeout},
		{"lock held, wrapped as a failure", errs.Wrap(errs.Failure, held, "tasks busy"), errs.Timeout},
	} {
		if got := exitCode(c.err); got != c.want {
			t.Errorf("%s: exitCode(%v) = %d, want %d", c.name, c.err, got, c.want)
		}
	}
}

// testTree is a small command tree with the conventions applied.
func testTree() *cobra.Command {
	root := &cobra.Command{Use: "hobbs", SilenceErrors: true, SilenceUsage: true}
	root.PersistentFlags().String("instance", "", "")
	mem := &cobra.Command{Use: "memory"}
	list := &cobra.Command{Use: "list", Args: usageArgs(cobra.NoArgs), RunE: func(*cobra.Command, []string) error { return nil }}
	list.Flags().Bool("json", false, "")
	mem.AddCommand(list, &cobra.Command{Use: "lint", RunE: func(*cobra.Command, []string) error { return nil }})
	root.AddCommand(mem)
	setupTree(root)
	return root
}

func runTree(args ...string) (string, int) {
	root := testTree()
	var out bytes.Buffer
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&out)
	err := root.Execute()
	if err == nil {
		return out.String(), 0
	}
	report(&out, root, args, err, hintOf)
	return out.String(), exitCode(err)
}

// Unknown commands, at the root or in a group, and unknown flags: exit 2,
// one error line, one hint with the nearest name.
func TestUnknownCommandsAndFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"memroy", "list"}, "hobbs: unknown command \"memroy\" for \"hobbs\"\nhobbs: hint: did you mean memory? (see 'hobbs --help')\n"},
		{[]string{"frobnicate"}, "hobbs: unknown command \"frobnicate\" for \"hobbs\"\nhobbs: hint: see 'hobbs --help'\n"},
		{[]string{"memory", "lst"}, "hobbs: unknown command \"lst\" for \"hobbs memory\"\nhobbs: hint: did you mean lint or list? (see 'hobbs memory --help')\n"},
		{[]string{"memory", "list", "--jsn"}, "hobbs: unknown flag: --jsn\nhobbs: hint: did you mean --json? (see 'hobbs memory list --help')\n"},
		{[]string{"memory", "list", "--instnce", "x"}, "hobbs: unknown flag: --instnce\nhobbs: hint: did you mean --instance? (see 'hobbs memory list --help')\n"},
		{[]string{"memory", "list", "--zzzzzz"}, "hobbs: unknown flag: --zzzzzz\nhobbs: hint: see 'hobbs memory list --help'\n"},
		{[]string{"memory", "list", "extra"}, "hobbs: unknown command \"extra\" for \"hobbs memory list\"\nhobbs: hint: see 'hobbs memory list --help'\n"},
	} {
		got, code := runTree(c.args...)
		if code != errs.Usage || got != c.want {
			t.Errorf("hobbs %v: exit %d\n%s\nwant exit 2\n%s", c.args, code, got, c.want)
		}
	}
	// A group alone prints its help.
	if got, code := runTree("memory"); code != 0 || !strings.Contains(got, "Available Commands:") {
		t.Errorf("hobbs memory: exit %d\n%s", code, got)
	}
	root := testTree()
	mem, _, _ := root.Find([]string{"memory"})
	list, _, _ := root.Find([]string{"memory", "list"})
	if !isGroup(root) || !isGroup(mem) || isGroup(list) {
		t.Error("isGroup: the root and memory are groups, list is not")
	}
}

func TestIsUsageMessage(t *testing.T) {
	for msg, want := range map[string]bool{
		`unknown flag: --frob`: true, `accepts 1 arg(s), received 2`: true, `required flag(s) "reason" not set`: true,
		`if any flags in the group [runtime base-from-debian] are set none of the others can be; [base-from-debian runtime] were all set`: true,
		`open /x: no such file or directory`: false,
	} {
		if isUsageMessage(msg) != want {
			t.Errorf("isUsageMessage(%q) = %v", msg, !want)
		}
	}
}
