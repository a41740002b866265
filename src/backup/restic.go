package backup

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"

	"github.com/hobbs-agent/hobbs/src/errs"
)

// MinResticVersion is the oldest restic this package drives (what Debian
// bookworm ships): its --json output of backup and snapshots, and its
// messages, are what the parsing here reads.
var MinResticVersion = [3]int{0, 14, 0}

// EnvRestic names another restic binary (tests, a restic outside PATH).
const EnvRestic = "HOBBS_RESTIC"

// Restic drives the restic CLI against one repository. The password
// reaches restic through a pipe (--password-file /dev/fd/3), never argv,
// the environment or the disk; the repository through RESTIC_REPOSITORY
// (a rest: URL can hold credentials, which argv would show to every user).
type Restic struct {
	Bin      string // "" : $HOBBS_RESTIC, else restic on PATH
	Repo     string
	Password []byte
	// NoCache makes restic read everything from the repository itself
	// (restore: a new machine has no cache, and a cached copy of a damaged
	// tree would hide the damage).
	NoCache bool
}

func (r *Restic) bin() string {
	if r.Bin != "" {
		return r.Bin
	}
	if b := os.Getenv(EnvRestic); b != "" {
		return b
	}
	return "restic"
}

// env is the process environment without restic's own repository and
// password settings, which this package sets itself.
func env() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "RESTIC_PASSWORD", "RESTIC_PASSWORD_FILE", "RESTIC_PASSWORD_COMMAND", "RESTIC_REPOSITORY", "RESTIC_REPOSITORY_FILE":
			continue
		}
		out = append(out, kv)
	}
	return out
}

// command builds a restic command with the repository and the password
// set; close must be called after the command started (or failed to).
func (r *Restic) command(ctx context.Context, args ...string) (*exec.Cmd, func(), error) {
	full := []string{}
	if r.Password != nil {
		full = append(full, "--password-file", "/dev/fd/3")
	}
	if r.NoCache {
		full = append(full, "--no-cache")
	}
	full = append(full, args...)
	cmd := exec.CommandContext(ctx, r.bin(), full...)
	cmd.Env = append(env(), "RESTIC_REPOSITORY="+r.Repo)
	// SIGTERM first, so restic removes its lock; SIGKILL after a grace.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10e9
	closeFn := func() {}
	if r.Password != nil {
		pr, pw, err := os.Pipe()
		if err != nil {
			return nil, nil, errs.Wrap(errs.Failure, err, "pipe")
		}
		// A password is far smaller than a pipe's buffer: written whole now.
		_, err = pw.Write(append(append([]byte{}, r.Password...), '\n'))
		pw.Close()
		if err != nil {
			pr.Close()
			return nil, nil, errs.Wrap(errs.Failure, err, "pass the password to restic")
		}
		cmd.ExtraFiles = []*os.File{pr}
		closeFn = func() { pr.Close() }
	}
	return cmd, closeFn, nil
}

// run runs restic with args and returns its stdout; a failure is mapped to
// a typed error (resticError).
func (r *Restic) run(ctx context.Context, args ...string) ([]byte, error) {
	var out bytes.Buffer
	err := r.stream(ctx, func(line []byte) { out.Write(line); out.WriteByte('\n') }, args...)
	return out.Bytes(), err
}

// stream runs restic with args, calling line for each line of its
// stdout (read).
func (r *Restic) stream(ctx context.Context, line func([]byte), args ...string) error {
	return r.read(ctx, lines(line), args...)
}

// lines is a reader of restic's stdout that calls line for each line.
func lines(line func([]byte)) func(io.Reader) error {
	return func(out io.Reader) error {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			line(sc.Bytes())
		}
		return nil
	}
}

// read runs restic with args, handing its stdout to consume (what consume
// leaves unread is drained). consume's error, when restic succeeded, is
// the error. A repository locked by a restic that no longer runs (killed,
// the machine gone down) is unlocked (restic unlock removes only such
// stale locks) and the command run once more.
func (r *Restic) read(ctx context.Context, consume func(io.Reader) error, args ...string) error {
	err := r.read1(ctx, consume, args...)
	if errs.AdviceOf(err).Kind != RepoLocked || args[0] == "unlock" {
		return err
	}
	if uerr := r.read1(ctx, lines(func([]byte) {}), "unlock"); uerr != nil {
		return err
	}
	return r.read1(ctx, consume, args...)
}

func (r *Restic) read1(ctx context.Context, consume func(io.Reader) error, args ...string) error {
	cmd, closeFn, err := r.command(ctx, args...)
	if err != nil {
		return err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &limited{w: &stderr, n: 1 << 20}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		closeFn()
		return errs.Wrap(errs.Failure, err, "restic")
	}
	if err := cmd.Start(); err != nil {
		closeFn()
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return errs.Missingf("restic is not installed (%s not found)", r.bin()).Advise(NoRestic)
		}
		return errs.Wrap(errs.Failure, err, "start restic")
	}
	closeFn()
	cerr := consume(stdout)
	_, _ = io.Copy(io.Discard, stdout)
	err = cmd.Wait()
	if ctx.Err() != nil {
		return errs.Wrap(errs.Interrupted, ctx.Err(), "restic %s", args[0])
	}
	if err != nil {
		return resticError(r.Repo, args[0], stderr.String(), err)
	}
	return cerr
}

// limited writes at most n bytes to w and drops the rest.
type limited struct {
	w io.Writer
	n int
}

func (l *limited) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}

// ResticError is a failed restic command: what restic said, and the
// exit code.
type ResticError struct {
	Op     string
	Stderr string
	Code   int
}

func (e *ResticError) Error() string { return "restic " + e.Op + ": " + e.Message() }

// Message is restic's message: its Fatal: line, else its last line.
func (e *ResticError) Message() string {
	lines := strings.Split(strings.TrimSpace(e.Stderr), "\n")
	for _, l := range lines {
		if m, ok := strings.CutPrefix(l, "Fatal: "); ok {
			return m
		}
	}
	return strings.TrimSpace(lines[len(lines)-1])
}

// ErrExists is wrapped by the error of init on a repository that exists.
var ErrExists = errors.New("repository exists")

// resticError maps a failed restic command to an error of ours, by
// restic's words (restic 0.14 has one exit code for every fatal error).
func resticError(repo, op, stderr string, err error) error {
	re := &ResticError{Op: op, Stderr: stderr, Code: -1}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		re.Code = ee.ExitCode()
	}
	if strings.TrimSpace(stderr) == "" {
		re.Stderr = err.Error()
	}
	low := strings.ToLower(stderr)
	has := func(s ...string) bool {
		for _, x := range s {
			if strings.Contains(low, x) {
				return true
			}
		}
		return false
	}
	msg := re.Message()
	switch {
	case has("wrong password or no key found"):
		return &errs.Error{Code: errs.Usage, Msg: "the backup password does not open " + repo, Err: re, Advice: errs.NewAdvice(WrongPassword, "repo", repo)}
	case has("config file already exists"):
		return &errs.Error{Code: errs.Failure, Msg: "a repository exists at " + repo, Err: errors.Join(ErrExists, re)}
	case has("no space left on device", "disk quota exceeded"):
		return &errs.Error{Code: errs.Failure, Msg: "no space left", Err: re, Advice: errs.NewAdvice(NoSpace, "repo", repo)}
	case has("repository is already locked", "unable to create lock"):
		return &errs.Error{Code: errs.Failure, Msg: "the repository " + repo + " is locked by another restic", Err: re, Advice: errs.NewAdvice(RepoLocked, "repo", repo)}
	case has("connection refused", "no such host", "network is unreachable", "i/o timeout", "connection reset", "dial tcp",
		"server response unexpected", "giving up after", "tls:", "unable to open repository", "host key"):
		return &errs.Error{Code: errs.Failure, Msg: "cannot reach the repository " + repo, Err: re, Advice: errs.NewAdvice(Unreachable, "repo", repo)}
	case has("unable to open config file", "is there a repository at the following location"):
		return &errs.Error{Code: errs.Missing, Msg: "no restic repository at " + repo, Err: re, Advice: errs.NewAdvice(NoRepository, "repo", repo)}
	}
	return &errs.Error{Code: errs.Failure, Err: re, Advice: errs.NewAdvice(ResticFailed, "msg", msg)}
}

var versionRe = regexp.MustCompile(`restic (\d+)\.(\d+)\.(\d+)`)

// Version returns the version of restic, refusing one older than
// MinResticVersion.
func (r *Restic) Version(ctx context.Context) (string, error) {
	out, err := (&Restic{Bin: r.Bin}).run(ctx, "version")
	if err != nil {
		return "", err
	}
	m := versionRe.FindStringSubmatch(string(out))
	if m == nil {
		return "", errs.Failf("cannot read restic's version from %q", strings.TrimSpace(string(out)))
	}
	var v [3]int
	for i := range v {
		v[i], _ = strconv.Atoi(m[i+1])
	}
	s := fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2])
	if cmpVersion(v, MinResticVersion) < 0 {
		return s, errs.Missingf("restic %s is too old (hobbs needs %d.%d or newer)", s, MinResticVersion[0], MinResticVersion[1]).
			Advise(OldRestic, "version", s)
	}
	return s, nil
}

func cmpVersion(a, b [3]int) int {
	for i := range a {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}
