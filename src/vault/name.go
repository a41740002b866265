package vault

import (
	"bytes"
	"io"
	"os"

	"github.com/hobbs-agent/hobbs/src/errs"
)

// MaxNameLen is the longest entry name accepted.
const MaxNameLen = 64

// NameRule describes the entry name charset, for error messages and docs.
const NameRule = "1-64 characters from a-z 0-9 . _ -, starting with a letter or digit"

// ValidName reports whether name is an acceptable entry name. It is a
// byte-wise check (no regexp, no Unicode folding): anything outside the ASCII
// set below is refused, so a name can never be a path, a hidden file or a
// look-alike of another name.
func ValidName(name string) bool {
	if len(name) == 0 || len(name) > MaxNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// CheckName returns a usage error (exit 2) stating the rule when name is not
// a valid entry name.
func CheckName(name string) error {
	if ValidName(name) {
		return nil
	}
	shown := name
	if len(shown) > 80 {
		shown = shown[:80] + "…"
	}
	return errs.Usagef("invalid vault entry name %q: use %s", shown, NameRule).
		Advise(BadName)
}

// ReadValueFile is ReadValue of the file at path, a file of the user's
// named on the command line (vault set --from-file): one that cannot be
// opened is a usage error.
func ReadValueFile(path string, raw bool) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, errs.Wrap(errs.Usage, err, "read value")
	}
	defer f.Close()
	return ReadValue(f, raw)
}

// ReadValue reads a value to store from r: at most a little more than
// MaxValueSize (so that Set refuses a longer one rather than this reading
// it whole), without one trailing newline ("\n" or "\r\n", as echo or an
// editor adds) unless raw.
func ReadValue(r io.Reader, raw bool) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxValueSize+3))
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "read value")
	}
	if !raw {
		if bytes.HasSuffix(data, []byte("\r\n")) {
			data = data[:len(data)-2]
		} else if bytes.HasSuffix(data, []byte("\n")) {
			data = data[:len(data)-1]
		}
	}
	return data, nil
}
