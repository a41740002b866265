package image

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/adrg/xdg"
	"golang.org/x/term"

	"github.com/hobbs-agent/hobbs/src/style"
)

// A build's output. The engine's builder prints a great deal: the legacy
// builder a dozen lines per Dockerfile step, BuildKit a line per event,
// apt and npm theirs. buildLog keeps all of it in the build log file
// (BuildLogPath) and shows the user one line per step ("[3/24] COPY …"):
// on a terminal each step's line replaces the last, elsewhere each is a
// line of its own (none with Brief: the start and end lines say it all);
// with Verbose the output as the builder printed it. The
// legacy builder's deprecation banner, which the docker CLI prints when
// Hobbs selects that builder (DOCKER_BUILDKIT=0, no buildx), is never
// shown. When the build fails, the last lines of the output are shown
// with the log's path.

// BuildLogPath is where the output of the last build is kept, in full.
func BuildLogPath() string { return filepath.Join(xdg.StateHome, "hobbs", "logs", "build.log") }

var (
	// legacyStep is a step of the legacy builder ("Step 3/24 : COPY …")
	// or of podman's ("STEP 3/24: COPY …").
	legacyStep = regexp.MustCompile(`^(?:Step|STEP) (\d+/\d+) ?: (.*)$`)
	// kitStep is a step of BuildKit's plain progress ("#7 [3/9] COPY …",
	// "#7 [stage-1 2/3] RUN …"); "[internal] …" steps are not the
	// Dockerfile's.
	kitStep = regexp.MustCompile(`^#(\d+) \[(?:[^\]]* )?(\d+/\d+)\] (.*)$`)
	// kitExport is BuildKit's last step.
	kitExport = regexp.MustCompile(`^#(\d+) (exporting to image)$`)
)

// legacyBanner starts the docker CLI's notice that the legacy builder is
// deprecated; its lines that follow are indented, then a blank line.
const legacyBanner = "DEPRECATED: The legacy builder is deprecated"

// buildLog is an io.Writer for a build's output (both of its streams).
type buildLog struct {
	mu      sync.Mutex
	w       io.Writer // the user's
	tty     *os.File  // w's terminal, when the step line is rewritten in place
	verbose bool
	// brief: no step lines where each would be a line of its own
	// (BuildOptions.Brief).
	brief   bool
	file    *os.File // the build log; nil when it could not be made
	path    string
	fileErr error
	partial []byte
	banner  bool            // inside the deprecation banner
	seen    map[string]bool // BuildKit steps shown (by their #N)
	steps   int
	tail    []string // the last lines, for a failure
	onLine  bool     // a step line is on the terminal, not ended
	start   time.Time
}

// newBuildLog starts a build's output: to w as opt says, and in full to
// the build log.
func newBuildLog(w io.Writer, verbose bool) *buildLog {
	b := &buildLog{w: w, verbose: verbose, seen: map[string]bool{}, path: BuildLogPath(), start: time.Now()}
	if t := style.Terminal(w); t != nil && os.Getenv("TERM") != "dumb" {
		b.tty = t
	}
	if err := os.MkdirAll(filepath.Dir(b.path), 0o700); err != nil {
		b.fileErr = err
	} else {
		b.file, b.fileErr = os.OpenFile(b.path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
	}
	return b
}

func (b *buildLog) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.file != nil {
		if _, err := b.file.Write(p); err != nil {
			b.fileErr, b.file = err, nil
		}
	}
	b.partial = append(b.partial, p...)
	for {
		i := bytes.IndexByte(b.partial, '\n')
		if i < 0 {
			break
		}
		line := strings.TrimRight(string(b.partial[:i]), "\r")
		b.partial = b.partial[i+1:]
		if err := b.line(line); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// line handles one line of output.
func (b *buildLog) line(l string) error {
	if strings.HasPrefix(l, legacyBanner) {
		b.banner = true
		return nil
	}
	if b.banner {
		if l == "" || strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t") {
			return nil
		}
		b.banner = false
	}
	b.tail = append(b.tail, l)
	if len(b.tail) > 15 {
		b.tail = b.tail[1:]
	}
	if b.verbose {
		_, err := fmt.Fprintln(b.w, l)
		return err
	}
	step, ok := stepOf(l, b.seen)
	if !ok {
		return nil
	}
	b.steps++
	if b.tty == nil && b.brief {
		return nil
	}
	if b.tty == nil {
		_, err := fmt.Fprintln(b.w, step)
		return err
	}
	if w, _, err := term.GetSize(int(b.tty.Fd())); err == nil && w > 1 && len([]rune(step)) >= w {
		step = string([]rune(step)[:w-2]) + "…"
	}
	fmt.Fprint(b.tty, "\r\x1b[K")
	_, err := fmt.Fprint(b.w, step)
	b.onLine = true
	return err
}

// stepOf is the line shown for l when l starts a Dockerfile step: "[3/24]
// COPY …"; seen holds the BuildKit steps already shown.
func stepOf(l string, seen map[string]bool) (string, bool) {
	if m := legacyStep.FindStringSubmatch(l); m != nil {
		return "[" + m[1] + "] " + m[2], true
	}
	id, step := "", ""
	if m := kitStep.FindStringSubmatch(l); m != nil {
		id, step = m[1], "["+m[2]+"] "+m[3]
	} else if m := kitExport.FindStringSubmatch(l); m != nil {
		id, step = m[1], m[2]
	}
	if id == "" || seen[id] {
		return "", false
	}
	seen[id] = true
	return step, true
}

// finish ends the output of a build that ended with err: the step line is
// ended, and what happened said, with the build log's path (on a failure,
// after the last lines of the output, unless they were all shown).
func (b *buildLog) finish(what string, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.partial) > 0 {
		_ = b.line(string(b.partial))
		b.partial = nil
	}
	if b.onLine {
		fmt.Fprint(b.tty, "\r\x1b[K")
	}
	logNote := "full log: " + b.path
	if b.file != nil {
		_ = b.file.Close()
	}
	if b.fileErr != nil {
		logNote = fmt.Sprintf("no build log: %v", b.fileErr)
	}
	if err == nil {
		fmt.Fprintf(b.w, "built %s in %s (%s; %s)\n", what, time.Since(b.start).Round(100*time.Millisecond),
			style.N(b.steps, "step", "steps"), logNote)
		return
	}
	if !b.verbose && len(b.tail) > 0 {
		fmt.Fprintf(b.w, "the build's last lines (%s):\n", logNote)
		for _, l := range b.tail {
			fmt.Fprintf(b.w, "  %s\n", l)
		}
	}
}
