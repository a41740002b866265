package egress

import (
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// The record of what a session opened. A session's taint (src/provenance)
// is decided from the hosts its proxy passed it responses from, read in the
// audit log by the launcher whenever any session ends. A connection's
// egress.allow line is written when it ends, so a session that keeps a
// connection to an untrusted host open would count as untainted at every
// other session's end meanwhile. So before the first byte of a target's
// response can reach the client — a tunnel's before its "200 Connection
// established", a request's before its response head is passed on — the
// proxy has written an egress.open line for that target into the audit
// file itself (the same lock and single append as the batch writer), and
// does not pass the response on when it cannot. Only the first opening of
// each target in the proxy's life waits for that write: after it, the
// target is on record for the session.

// openedMax bounds the targets the proxy remembers as on record; beyond it
// every opening of another target writes its line.
const openedMax = 4096

// openedSet is the targets whose egress.open line is in the audit file.
// A target on record costs a read lock and a map lookup, no allocation.
type openedSet struct {
	mu sync.RWMutex
	m  map[openedKey]*openedTarget
}

type openedKey struct {
	host string
	port int
}

type openedTarget struct {
	mu       sync.Mutex
	recorded atomic.Bool
}

// opened makes sure the audit file says that rec's target is opened for
// the client, before the client receives any of its bytes. An error (the
// line cannot be written): the response must not be passed on.
func (s *Server) opened(rec *record) error {
	if s.opts.AuditPath == "" {
		return nil
	}
	key, set := openedKey{rec.host, rec.port}, &s.openedTargets
	set.mu.RLock()
	o := set.m[key]
	set.mu.RUnlock()
	if o != nil && o.recorded.Load() {
		return nil
	}
	if o == nil {
		set.mu.Lock()
		if o = set.m[key]; o == nil {
			o = &openedTarget{}
			if set.m == nil {
				set.m = map[openedKey]*openedTarget{}
			}
			if len(set.m) < openedMax {
				set.m[key] = o
			}
		}
		set.mu.Unlock()
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.recorded.Load() {
		return nil
	}
	l := s.auditLine(rec)
	l.Event, l.Outcome = "egress.open", "allowed"
	l.Detail.BytesUp, l.Detail.BytesDown, l.Detail.DurationMS, l.Detail.Error = 0, 0, 0, ""
	l.Subject = s.toAudit(l.Subject)
	d := &l.Detail
	d.Method, d.Rule, d.Reason, d.Path = s.toAudit(d.Method), s.toAudit(d.Rule), s.toAudit(d.Reason), s.toAudit(d.Path)
	line, err := json.Marshal(&l)
	if err != nil {
		return err
	}
	if red := audit.RedactBytes(line); red != nil {
		line = red
	}
	n, err := safefile.AppendCount(s.opts.AuditPath, append(line, '\n'), 0o600)
	if err != nil {
		if n > 0 { // end the part written, so that the next line parses
			safefile.Append(s.opts.AuditPath, []byte{'\n'}, 0o600)
		}
		return err
	}
	o.recorded.Store(true)
	return nil
}
