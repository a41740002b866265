package style

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hobbs-agent/hobbs/src/termsafe"
)

func TestN(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{{0, "0 checks"}, {1, "1 check"}, {2, "2 checks"}, {-1, "-1 checks"}} {
		if got := N(c.n, "check", "checks"); got != c.want {
			t.Errorf("N(%d) = %q, want %q", c.n, got, c.want)
		}
	}
	if got := N(1, "entry", "entries"); got != "1 entry" {
		t.Errorf("N(1, entry) = %q", got)
	}
}

// openPTY opens a pseudo-terminal pair: a terminal for the code under
// test (slave) and the side that reads what it shows (master).
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { slave.Close() })
	return master, slave
}

// shown is what the terminal shows after f wrote to it.
func shown(t *testing.T, master, slave *os.File, f func()) string {
	t.Helper()
	f()
	fmt.Fprint(slave, "\n<end>")
	var b bytes.Buffer
	buf := make([]byte, 4096)
	for !strings.Contains(b.String(), "<end>") {
		n, err := master.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			t.Fatal(err)
		}
	}
	return strings.TrimSuffix(b.String(), "\r\n<end>")
}

func TestColourOnATerminalOnly(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	t.Setenv("TERM", "xterm")
	master, slave := openPTY(t)

	// A terminal, directly and through termsafe: coloured. Text from
	// the instance written in colour is still escaped.
	if got := shown(t, master, slave, func() { Fprint(slave, Fail, "fail") }); got != "\x1b[31mfail\x1b[0m" {
		t.Errorf("on a terminal: %q", got)
	}
	w := termsafe.Wrap(slave)
	if got := shown(t, master, slave, func() { Fprint(w, Warn, "x\x1b]52;c;AAAA\x07") }); got != "\x1b[33mx\\x1b]52;c;AAAA\\x07\x1b[0m" {
		t.Errorf("through termsafe: %q", got)
	}

	// NO_COLOR (any value) and TERM=dumb: none.
	for _, env := range [][2]string{{"NO_COLOR", "1"}, {"TERM", "dumb"}} {
		t.Run(env[0], func(t *testing.T) {
			t.Setenv(env[0], env[1])
			if got := shown(t, master, slave, func() { Fprint(slave, OK, "ok") }); got != "ok" {
				t.Errorf("%s=%s: %q", env[0], env[1], got)
			}
		})
	}

	// A pipe or a buffer: none.
	var b bytes.Buffer
	Fprint(&b, Hint, "hint:")
	if b.String() != "hint:" || On(&b) || On(io.Discard) {
		t.Errorf("to a buffer: %q", b.String())
	}
	r, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer pw.Close()
	if On(pw) {
		t.Error("a pipe gets colour")
	}
}
