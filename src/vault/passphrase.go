package vault

import (
	"bytes"
	"errors"
	"io"
	"os"

	"github.com/hobbs-agent/hobbs/src/errs"
)

// EnvPassphraseFile names a file whose first line is the passphrase of a
// protected identity. It exists for scripts and tests, which have no
// terminal; the passphrase itself never travels in argv or the environment.
const EnvPassphraseFile = "HOBBS_VAULT_PASSPHRASE_FILE"

// PassphraseFunc returns the passphrase of a protected identity. prompt says
// what it is for; confirm asks for it twice (when setting a new one).
type PassphraseFunc func(prompt string, confirm bool) ([]byte, error)

// ErrNoTerminal is what an asker (Passphrases) returns when there is no
// terminal to ask on.
var ErrNoTerminal = errors.New("no terminal to ask a passphrase on")

// FilePassphrase is Open's PassphraseFunc: the first line of the file
// named by $HOBBS_VAULT_PASSPHRASE_FILE; without it, it fails with advice
// (NoTerminal). It never reads stdin, which may carry a secret value.
func FilePassphrase(prompt string, confirm bool) ([]byte, error) {
	return Passphrases(nil)(prompt, confirm)
}

// Passphrases is a PassphraseFunc that takes the passphrase from the file
// named by $HOBBS_VAULT_PASSPHRASE_FILE if set, else from ask (the command
// layer's prompt on the terminal, which returns ErrNoTerminal when there is
// none); nil ask asks nothing. No passphrase, or an empty one, is an error.
func Passphrases(ask PassphraseFunc) PassphraseFunc {
	return func(prompt string, confirm bool) ([]byte, error) {
		if f := os.Getenv(EnvPassphraseFile); f != "" {
			return passphraseFromFile(f)
		}
		if ask == nil {
			return nil, noTerminal()
		}
		return asked(ask(prompt, confirm))
	}
}

// asked is the answer of an asker: ErrNoTerminal becomes advice, an empty
// passphrase is refused.
func asked(p []byte, err error) ([]byte, error) {
	if errors.Is(err, ErrNoTerminal) {
		return nil, noTerminal()
	}
	if err != nil {
		return nil, err
	}
	if len(p) == 0 {
		return nil, errs.Failf("empty passphrase")
	}
	return p, nil
}

func noTerminal() error {
	return errs.Failf("the vault identity is passphrase-protected and there is no terminal to ask on").
		Advise(NoTerminal, "env", EnvPassphraseFile)
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
