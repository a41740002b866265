package main

// Script commands for the vault scenarios (tests/script/vault_*.txtar).

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/vault"
)

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

// ptyrun [-stdout] ANSWERS CMD [ARGS...]: run CMD in a new session whose
// controlling terminal (and stdin and stderr) is a fresh pseudo-terminal, as
// a user at a terminal would. Each time the terminal shows a prompt (output
// ending in ": "), the next line of the file ANSWERS is typed. The terminal
// transcript becomes stderr, CMD's stdout stays stdout; with -stdout, stdout
// is the terminal too. TERM is the scenario's, else dumb. With "!", CMD must
// fail.
func cmdPtyRun(ts *testscript.TestScript, neg bool, args []string) {
	allTTY := len(args) > 0 && args[0] == "-stdout"
	if allTTY {
		args = args[1:]
	}
	if len(args) < 2 {
		ts.Fatalf("usage: ptyrun [-stdout] ANSWERS CMD [ARGS...]")
	}
	answers := strings.SplitAfter(ts.ReadFile(args[0]), "\n")
	master, slave, err := openPTY()
	ts.Check(err)
	defer master.Close()
	path := args[1]
	for _, dir := range filepath.SplitList(ts.Getenv("PATH")) {
		if p := filepath.Join(dir, args[1]); fileExecutable(p) {
			path = p
			break
		}
	}
	cmd := exec.Command(path, args[2:]...)
	cmd.Args[0] = args[1]
	cmd.Dir = ts.MkAbs(".")
	for _, k := range []string{"PATH", "HOME", "USER", "TMPDIR", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME",
		"XDG_STATE_HOME", "HOBBS_HOME", "HOBBS_CONTEXT", "HOBBS_DOCKER", vault.EnvPassphraseFile, "NO_COLOR"} {
		cmd.Env = append(cmd.Env, k+"="+ts.Getenv(k))
	}
	if t := ts.Getenv("TERM"); t != "" {
		cmd.Env = append(cmd.Env, "TERM="+t)
	} else {
		cmd.Env = append(cmd.Env, "TERM=dumb")
	}
	var stdout strings.Builder
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, &stdout, slave
	if allTTY {
		cmd.Stdout = slave
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	ts.Check(cmd.Start())

	var transcript strings.Builder
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			transcript.Write(buf[:n])
			if strings.HasSuffix(strings.TrimRight(transcript.String(), "\x1b[FK"), ": ") && len(answers) > 0 && answers[0] != "" {
				// Type only once the program has turned echo off, as a
				// person would after reading the prompt; if it never does,
				// the echoed answer shows in the transcript. (The bound is
				// a safety net: every prompt here turns echo off, and a
				// loaded machine can take a while between the two.)
				for i := 0; i < 2000; i++ {
					t, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
					if err != nil || t.Lflag&unix.ECHO == 0 {
						break
					}
					time.Sleep(5 * time.Millisecond)
				}
				master.Write([]byte(strings.TrimSuffix(answers[0], "\n") + "\r"))
				answers = answers[1:]
			}
			if err != nil {
				return
			}
		}
	}()
	errc := make(chan error, 1)
	go func() { errc <- cmd.Wait() }()
	select {
	case err = <-errc:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		slave.Close()
		ts.Fatalf("ptyrun: %s did not finish; terminal so far:\n%s", args[1], transcript.String())
	}
	slave.Close() // the last slave descriptor: the reader gets EIO after draining
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		ts.Fatalf("ptyrun: terminal output did not end")
	}
	fmt.Fprint(ts.Stdout(), stdout.String())
	fmt.Fprint(ts.Stderr(), transcript.String())
	if (err != nil) != neg {
		ts.Fatalf("ptyrun %s: %v (want failure: %v)\nterminal:\n%s", args[1], err, neg, transcript.String())
	}
}

func fileExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// openPTY allocates a pseudo-terminal pair (Linux /dev/ptmx).
func openPTY() (master, slave *os.File, err error) {
	master, err = os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		master.Close()
		return nil, nil, err
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	return master, slave, nil
}
