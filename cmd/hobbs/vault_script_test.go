package main

// Script commands for the vault scenarios (tests/script/vault_*.txtar).

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/vault"
)

func init() {
	scriptCmds["requireage"] = cmdRequireAge
	scriptCmds["vaultcrash"] = cmdVaultCrash
	scriptCmds["exactly"] = cmdExactly
	scriptCmds["treecontains"] = cmdTreeContains
}

// requireage: in CI (which installs the Debian package age, see .ci/run) a
// missing age CLI fails the scenario. Scenarios follow it with
// "[!exec:age] skip" for machines without age outside CI.
func cmdRequireAge(ts *testscript.TestScript, neg bool, args []string) {
	if _, err := exec.LookPath("age"); err != nil && os.Getenv("CI") != "" {
		ts.Fatalf("age CLI not found; CI installs the Debian package age")
	}
}

// vaultcrash STEP: run hobbs vault rotate in-process on $HOBBS_HOME and
// stop it at STEP (see vault.Vault.Hook), as a crash there would.
func cmdVaultCrash(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: vaultcrash STEP")
	}
	in, err := instance.At(ts.Getenv("HOBBS_HOME"))
	ts.Check(err)
	v := vault.Open(in)
	v.Passphrase = nil
	reached := false
	v.Hook = func(step string) error {
		if step == args[0] {
			reached = true
			return errors.New("simulated crash")
		}
		return nil
	}
	_, err = v.Rotate(vault.RotateOptions{})
	if !reached {
		ts.Fatalf("rotate never reached step %s (err: %v)", args[0], err)
	}
	ts.Logf("rotate stopped: %v", err)
}

// exactly FILE|stdout|stderr GOSTRING: the content is exactly the Go-quoted
// string (to assert bytes such as a missing final newline).
func cmdExactly(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: exactly FILE|stdout|stderr \"go string\"")
	}
	want, err := strconv.Unquote(`"` + args[1] + `"`)
	ts.Check(err)
	got := ts.ReadFile(args[0])
	if (got == want) == neg {
		ts.Fatalf("%s is %q, want %s%q", args[0], got, map[bool]string{true: "not ", false: ""}[neg], want)
	}
}

// treecontains DIR STRING: some regular file under DIR contains STRING.
func cmdTreeContains(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: treecontains DIR STRING")
	}
	var hits []string
	n := 0
	err := filepath.WalkDir(ts.MkAbs(args[0]), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		n++
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), args[1]) {
			hits = append(hits, p)
		}
		return nil
	})
	ts.Check(err)
	if n == 0 {
		ts.Fatalf("%s holds no files", args[0])
	}
	if (len(hits) > 0) == neg {
		if neg {
			ts.Fatalf("%q found in %s", args[1], strings.Join(hits, ", "))
		}
		ts.Fatalf("%q not found in any of %d files under %s", args[1], n, args[0])
	}
	ts.Logf("searched %d files under %s", n, args[0])
}
