package main

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"golang.org/x/term"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/vault"
)

// passphrase is how hobbs unlocks a protected vault identity, whoever opens
// the vault (a command, the launcher starting a session, hobbs serve): the
// passphrase file if set, else a prompt on the terminal.
var passphrase = vault.Passphrases(askPassphrase)

// askPassphrase asks a passphrase on the controlling terminal (/dev/tty)
// with echo off, twice when confirm; vault.ErrNoTerminal when there is none.
// It never reads stdin, which may carry a secret value.
func askPassphrase(prompt string, confirm bool) ([]byte, error) {
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil || !term.IsTerminal(int(tty.Fd())) {
		if tty != nil {
			tty.Close()
		}
		return nil, vault.ErrNoTerminal
	}
	defer tty.Close()
	ask := func(p string) ([]byte, error) {
		fmt.Fprintf(tty, "%s: ", p)
		b, err := term.ReadPassword(int(tty.Fd()))
		fmt.Fprintln(tty)
		return b, err
	}
	p1, err := ask(prompt)
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "read passphrase")
	}
	if confirm {
		p2, err := ask("Confirm passphrase")
		if err != nil {
			return nil, errs.Wrap(errs.Failure, err, "read passphrase")
		}
		if !bytes.Equal(p1, p2) {
			return nil, errs.Failf("the passphrases do not match")
		}
	}
	return p1, nil
}

// readSecret reads a value to store (vault set): from the file fromFile
// unless it is "" or "-"; else, when in is a terminal (tty), hidden, after
// a prompt naming name on prompt; else from in (vault.ReadValue).
func readSecret(in io.Reader, tty bool, prompt io.Writer, name, fromFile string, raw bool) ([]byte, error) {
	f, isFile := in.(*os.File)
	switch {
	case fromFile != "" && fromFile != "-":
		return vault.ReadValueFile(fromFile, raw)
	case tty && isFile:
		fmt.Fprintf(prompt, "Value for %s (input hidden): ", name)
		data, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(prompt)
		if err != nil {
			return nil, errs.Wrap(errs.Failure, err, "read value")
		}
		return data, nil // nothing to trim: the terminal's Enter is not part of it
	}
	return vault.ReadValue(in, raw)
}
