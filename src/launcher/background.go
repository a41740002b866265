package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/adrg/xdg"

	"github.com/hobbs-agent/hobbs/src/engine"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
)

// The background launcher. On a terminal, and with --detach, a session's
// launcher (the process that runs Execute and cleans up after it) is this
// same hobbs, re-run as `hobbs run --detached-child` in a process session
// of its own, its output in SessionLog: the session outlives the terminal
// that started it. With --detach the terminal's hobbs returns once the
// agent runs; on a terminal (Attach) the launcher leaves the agent's start
// to the terminal's hobbs: it writes a ready file once the agent may start,
// and the terminal's hobbs then starts the agent attached to the terminal.

// Background is a session's launcher running in the background.
type Background struct {
	Name, LogPath string
	cmd           *exec.Cmd
	ended         chan error
	e             engine.CLI
}

// Terminal is where the foreground hobbs talks to the user.
type Terminal struct {
	In          io.Reader
	Out, ErrOut io.Writer
	Status      func(format string, args ...any)
	// Words words the launcher's notices (kinds.go).
	Words func(errs.Advice) string
}

// StartBackground starts `hobbs run --detached-child --name NAME ARGS...`
// (this executable) for session name of instance in, in a process session
// of its own, its output in SessionLog.
func StartBackground(e engine.CLI, in instance.Instance, name string, args []string) (*Background, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "find hobbs")
	}
	logPath := SessionLog(in, name)
	if err := os.MkdirAll(filepath.Dir(logPath), 0o700); err != nil {
		return nil, errs.Wrap(errs.Failure, err, "session log")
	}
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "session log")
	}
	defer f.Close()
	c := exec.Command(exe, append([]string{"run", "--detached-child", "--name", name}, args...)...)
	c.Env = append(os.Environ(), instance.EnvHome+"="+in.Root)
	c.Stdout, c.Stderr = f, f
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := c.Start(); err != nil {
		return nil, errs.Wrap(errs.Failure, err, "start the session's launcher")
	}
	b := &Background{Name: name, LogPath: logPath, cmd: c, ended: make(chan error, 1), e: e}
	go func() { b.ended <- c.Wait() }()
	return b, nil
}

// procExitCode is a process's exit code from its Wait error.
func procExitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return 1
	}
	return 0
}

// running reports whether the session's agent container runs.
func (b *Background) running(ctx context.Context) bool {
	out, err := b.e.Output(ctx, "inspect", "--format", "{{.State.Running}}", b.Name)
	return err == nil && strings.TrimSpace(out) == "true"
}

// logFollower copies what the launcher writes to its log to w.
type logFollower struct {
	path string
	off  int64
	w    io.Writer
}

func (l *logFollower) copy() {
	f, err := os.Open(l.path)
	if err != nil {
		return
	}
	defer f.Close()
	if _, err := f.Seek(l.off, io.SeekStart); err != nil {
		return
	}
	n, _ := io.Copy(l.w, f)
	l.off += n
}

// Detach waits until the background launcher's agent runs, then prints the
// session's name and leaves it running; if the launcher ends first, the end
// of its output says why.
func (b *Background) Detach(ctx context.Context, t Terminal) error {
	t.Status("starting session %s in the background (output: %s)", b.Name, b.LogPath)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-b.ended:
			out, _ := os.ReadFile(b.LogPath)
			fmt.Fprint(t.ErrOut, LastLines(string(out), 20))
			return b.endedEarly(err)
		case <-ctx.Done():
			_ = b.cmd.Process.Signal(syscall.SIGTERM)
			return ctx.Err()
		case <-tick.C:
			if b.running(ctx) {
				fmt.Fprintln(t.Out, b.Name)
				t.Status("%s", word(t.Words, Started, "name", b.Name))
				return b.cmd.Process.Release()
			}
		}
	}
}

// EndedEarly is the error of a session whose background launcher ended
// before the session was up. Said: the launcher's output, shown already,
// ends with its own error (a "hobbs: " line: what went wrong and the next
// step), which is then the whole story.
type EndedEarly struct {
	Name string
	Code int
	Said bool
}

func (e *EndedEarly) Error() string { return fmt.Sprintf("session %s ended before it was up", e.Name) }

// endedEarly is the EndedEarly of b's launcher, ended with wait error err.
func (b *Background) endedEarly(err error) error {
	out, _ := os.ReadFile(b.LogPath)
	last := strings.TrimSpace(LastLines(string(out), 1))
	return &EndedEarly{Name: b.Name, Code: procExitCode(err), Said: strings.HasPrefix(last, "hobbs: ")}
}

// ReadyFile is where the background launcher of session name says that its
// agent may start.
func ReadyFile(in instance.Instance, name string) string { return SessionLog(in, name) + ".ready" }

// Attach is hobbs run on a terminal, once b (started with --ready-file
// ReadyFile) runs: its output is shown here while the session starts, then
// the agent is started attached to the terminal. When the agent ends, the
// launcher's cleanup is waited for and the agent's exit code returned; when
// the terminal detaches (Ctrl-P Ctrl-Q), the session goes on and this
// returns at once.
func (b *Background) Attach(ctx context.Context, ready string, t Terminal) (int, error) {
	defer os.Remove(ready)
	follow := &logFollower{path: b.LogPath, w: t.ErrOut}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for up := false; !up; {
		select {
		case err := <-b.ended:
			follow.copy()
			return procExitCode(err), b.endedEarly(err)
		case <-ctx.Done():
			_ = b.cmd.Process.Signal(syscall.SIGTERM)
			<-b.ended
			follow.copy()
			return errs.Interrupted, &errs.Error{Code: errs.Interrupted, Msg: "interrupted"}
		case <-tick.C:
			follow.copy()
			_, err := os.Stat(ready)
			up = err == nil
		}
	}
	c, err := b.e.Command(context.WithoutCancel(ctx), nil, "start", "--attach", "--interactive", b.Name)
	if err != nil {
		return 0, err
	}
	t.Status("%s", word(t.Words, Attached, "name", b.Name))
	c.Stdin, c.Stdout, c.Stderr = t.In, t.Out, t.ErrOut
	started := make(chan error, 1)
	go func() { started <- c.Run() }()
	var startErr error
	select {
	case startErr = <-started:
	case <-ctx.Done(): // SIGTERM: the launcher stops the agent
		_ = b.cmd.Process.Signal(syscall.SIGTERM)
		startErr = <-started
	}
	code := procExitCode(startErr)
	if ctx.Err() == nil && b.running(context.Background()) {
		fmt.Fprintf(t.ErrOut, "\nhobbs: %s\n", word(t.Words, Detached, "name", b.Name))
		return 0, b.cmd.Process.Release()
	}
	lerr := <-b.ended // its cleanup
	follow.copy()
	// The launcher's own end (a stop, a failed proxy) is in its output,
	// shown above, and its code is the session's.
	if lc := procExitCode(lerr); lc != 0 {
		return lc, nil
	}
	return code, nil
}

// StartPlaybookRun starts `hobbs playbook run NAME` (this executable; with
// --scheduled for a schedule's run) in a process session of its own, in
// the background, its output in a new file of the user's state directory,
// and returns its pid and that file. The caller has done the checks and
// the approval on the terminal.
func StartPlaybookRun(in instance.Instance, name string, scheduled bool) (pid int, logPath string, err error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, "", errs.Wrap(errs.Failure, err, "find hobbs")
	}
	dir := filepath.Join(xdg.StateHome, "hobbs", "runs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, "", errs.Wrap(errs.Failure, err, "run log directory")
	}
	logPath = filepath.Join(dir, fmt.Sprintf("%s-%s.log", name, time.Now().UTC().Format("20060102T150405Z")))
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return 0, "", errs.Wrap(errs.Failure, err, "run log")
	}
	defer f.Close()
	args := []string{"playbook", "run", name}
	if scheduled {
		args = append(args, "--scheduled")
	}
	c := exec.Command(exe, args...)
	c.Env = append(os.Environ(), instance.EnvHome+"="+in.Root)
	c.Stdout, c.Stderr = f, f
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := c.Start(); err != nil {
		return 0, "", errs.Wrap(errs.Failure, err, "start the run")
	}
	return c.Process.Pid, logPath, c.Process.Release()
}
