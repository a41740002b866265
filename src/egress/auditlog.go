package egress

import (
	"bytes"
	"sync"
	"time"

	"github.com/hobbs-agent/hobbs/src/audit"
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

func (a *auditLog) log(l *auditLine) {
	if a.ch == nil {
		return
	}
	a.send(a.appendLine(nil, l))
}

// appendLine appends l's line, redacted, to batch: an event loop gathers
// its lines for a later send, so that a tunnel costs no channel send (and
// no wake-up of the writer) of its own.
func (a *auditLog) appendLine(batch []byte, l *auditLine) []byte {
	if a.ch == nil {
		return batch
	}
	start := len(batch)
	batch = l.appendJSON(batch)
	if red := audit.RedactBytes(batch[start:]); red != nil {
		batch = append(batch[:start], red...)
	}
	return append(batch, '\n')
}

// send queues whole lines (one or a batch) for the writer; the writer owns
// them from then on.
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
)

func (a *auditLog) run() {
	defer close(a.done)
	var buf []byte
	failing := false
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for line := range a.ch {
		buf = append(buf[:0], line...)
		// Gather what arrives in the next few milliseconds: under load one
		// locked append then carries many lines instead of one each.
		timer.Reset(auditBatchWait)
	gather:
		for len(buf) < auditBatchMax {
			select {
			case more, ok := <-a.ch:
				if !ok {
					break gather
				}
				buf = append(buf, more...)
			case <-timer.C:
				break gather
			}
		}
		timer.Stop()
		if err := safefile.Append(a.path, buf, 0o600); err != nil {
			if !failing {
				a.logf("audit: cannot write %s: %v", a.path, err)
			}
			failing = true
		} else {
			failing = false
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
