package egress

import (
	"bytes"
	"encoding/json"
	"sync"
	"time"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/policy"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// auditLog writes decisions to the audit file from one goroutine, so that a
// slow disk never holds up a connection for longer than a channel send. It
// batches the lines that queued up meanwhile into one safefile.Append — the
// same flock on "<path>.lock" plus a single O_APPEND write that every other
// Hobbs process uses — so lines from the proxy and from other processes
// never interleave.
type auditLog struct {
	path string
	ch   chan []byte
	done chan struct{}
	logf func(string, ...any)
	mu   sync.RWMutex // held for reading while sending, for writing to close
	shut bool
}

func newAuditLog(path string, logf func(string, ...any)) *auditLog {
	a := &auditLog{path: path, logf: logf}
	if path == "" {
		return a
	}
	a.ch = make(chan []byte, 4096)
	a.done = make(chan struct{})
	go a.run()
	return a
}

// log queues l's line, redacted, for the writer.
func (a *auditLog) log(l *policy.AuditLine) {
	if a.ch == nil {
		return
	}
	line, err := json.Marshal(l)
	if err != nil {
		a.logf("audit: %v", err)
		return
	}
	if red := audit.RedactBytes(line); red != nil {
		line = red
	}
	a.send(append(line, '\n'))
}

// send queues whole lines for the writer; the writer owns them from then
// on.
func (a *auditLog) send(line []byte) {
	if a.ch == nil || len(line) == 0 {
		return
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.shut {
		a.logf("audit: %d line(s) after shutdown dropped", bytes.Count(line, []byte{'\n'}))
		return
	}
	a.ch <- line
}

const (
	auditBatchMax  = 256 << 10
	auditBatchWait = 20 * time.Millisecond // collect lines this long before one append
	auditKeepMax   = 16 << 20              // lines kept while the file cannot be written
)

// auditRetry is how long the writer waits before trying again a file it
// could not write (a variable for tests).
var auditRetry = 500 * time.Millisecond

// run writes the queued lines. Lines it cannot write (no descriptor left,
// the lock file unreadable, a full disk) are kept and tried again every
// auditRetry, up to auditKeepMax bytes of them; beyond that the oldest are
// dropped and counted. A batch that was written in part is not written
// twice.
func (a *auditLog) run() {
	defer close(a.done)
	var buf []byte // what is not in the file yet (after a partial write, from the middle of a line)
	failing, open := false, true
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		if len(buf) == 0 {
			line, ok := <-a.ch
			if !ok {
				return
			}
			buf = append(buf, line...)
		}
		// Gather what arrives in the next few milliseconds: under load one
		// locked append then carries many lines instead of one each. While
		// the file cannot be written, gather until the next try.
		wait := auditBatchWait
		if failing {
			wait = auditRetry
		}
		timer.Reset(wait)
	gather:
		for open && (failing || len(buf) < auditBatchMax) {
			select {
			case more, ok := <-a.ch:
				if !ok {
					open = false
					break gather
				}
				buf = append(buf, more...)
			case <-timer.C:
				break gather
			}
		}
		timer.Stop()
		n, err := safefile.AppendCount(a.path, buf, 0o600)
		buf = buf[:copy(buf, buf[n:])]
		switch {
		case err == nil:
			if failing {
				a.logf("audit: writing %s again", a.path)
			}
			failing = false
		case !open:
			a.logf("audit: cannot write %s: %v; %d line(s) lost at exit", a.path, err, bytes.Count(buf, []byte{'\n'}))
			return
		default:
			if !failing {
				a.logf("audit: cannot write %s: %v; keeping the lines, trying again every %v", a.path, err, auditRetry)
			}
			failing = true
			if over := len(buf) - auditKeepMax; over > 0 {
				cut := over + bytes.IndexByte(buf[over:], '\n') + 1
				a.logf("audit: %d oldest line(s) dropped: %s still cannot be written", bytes.Count(buf[:cut], []byte{'\n'}), a.path)
				buf = buf[:copy(buf, buf[cut:])]
			}
		}
		if !open && len(buf) == 0 {
			return
		}
	}
}

// close flushes the queued lines and stops the writer.
func (a *auditLog) close() {
	if a.ch == nil {
		return
	}
	a.mu.Lock()
	if a.shut {
		a.mu.Unlock()
		return
	}
	a.shut = true
	close(a.ch)
	a.mu.Unlock()
	<-a.done
}
