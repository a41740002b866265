package vault

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"golang.org/x/term"

	"github.com/hobbs-agent/hobbs/src/errs"
)

// EnvPassphraseFile names a file whose first line is the passphrase of a
// protected identity. It exists for scripts and tests, which have no
// terminal; the passphrase itself never travels in argv or the environment.
const EnvPassphraseFile = "HOBBS_VAULT_PASSPHRASE_FILE"

// PassphraseFunc returns the passphrase of a protected identity. prompt says
// what it is for; confirm asks for it twice (when setting a new one).
type PassphraseFunc func(prompt string, confirm bool) ([]byte, error)

// TerminalPassphrase is the default PassphraseFunc: the first line of the
// file named by $HOBBS_VAULT_PASSPHRASE_FILE if set, else asked on the
// controlling terminal (/dev/tty) with echo off. With neither it fails with a
// hint; it never reads stdin, which may carry a secret value.
func TerminalPassphrase(prompt string, confirm bool) ([]byte, error) {
	if f := os.Getenv(EnvPassphraseFile); f != "" {
		return passphraseFromFile(f)
	}
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil || !term.IsTerminal(int(tty.Fd())) {
		if tty != nil {
			tty.Close()
		}
		return nil, errs.Failf("the vault identity is passphrase-protected and there is no terminal to ask on").
			WithHint("run on a terminal, or set %s to a file holding the passphrase", EnvPassphraseFile)
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
	if len(p1) == 0 {
		return nil, errs.Failf("empty passphrase")
	}
	return p1, nil
}

func passphraseFromFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "read passphrase file ($%s)", EnvPassphraseFile)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "read passphrase file ($%s)", EnvPassphraseFile)
	}
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		data = data[:i]
	}
	data = bytes.TrimSuffix(data, []byte("\r"))
	if len(data) == 0 {
		return nil, errs.Failf("passphrase file %s ($%s) is empty", path, EnvPassphraseFile)
	}
	return data, nil
}
