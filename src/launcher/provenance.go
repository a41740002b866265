package launcher

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"

	"github.com/hobbs-agent/hobbs/src/engine"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/policy"
	"github.com/hobbs-agent/hobbs/src/provenance"
)

// A session's provenance (src/provenance): the launcher records its origin
// before the agent can write, and at its end, once its containers are gone
// and its proxy has written its last audit line, the hosts its proxy passed
// it responses from; what a tainted session changed in the shares then
// waits for hobbs review.

// begin neutralises the shares and begins the provenance record, each when
// the session has it.
func (s *Session) begin() error {
	if s.Neutralise != nil {
		s.Neutralise("start")
	}
	// The layers' snapshots and the record's start read the shares, and
	// neither writes them: both at once.
	layers := spawn(func() error {
		if !s.layered() {
			return nil
		}
		return s.makeLayers()
	})
	var err error
	if s.Provenance != nil {
		err = s.beginProvenance()
	}
	return errors.Join(layers.wait(), err)
}

// beginProvenance records the session's start, with where its proxy's
// lines will start in the proxy audit log.
func (s *Session) beginProvenance() error {
	var from int64
	if fi, err := s.Instance.FS().Stat(s.Instance.EgressAuditLog()); err == nil {
		from = fi.Size()
	}
	engine.Tracef("provenance: begin")
	begin := s.Provenance.Begin
	if s.layered() {
		begin = s.Provenance.BeginLayer
	}
	err := begin(s.Name, s.plan.Origin(), s.owner, from, OwnerAlive)
	engine.Tracef("provenance: begun")
	return err
}

// neutraliseEnd neutralises the shares once, at the session's end.
func (s *Session) neutraliseEnd() {
	if s.Neutralise != nil {
		s.neutralisedEnd.Do(func() { s.Neutralise("end") })
	}
}

// afterAgent starts what the session's end needs of the shares, once the
// agent's container is gone (nothing of the session writes to them any
// more) and the start's were done: they are neutralised, then read for the
// record's end (a Snapshot), while the cleanup removes the proxy's
// container and the session's other objects.
func (s *Session) afterAgent() {
	if s.began == nil || s.snapshot != nil || s.layered() {
		return // a layered session's changes are its layers: nothing to read
	}
	select {
	case <-s.began.done:
	default:
		return // not begun: the end does both itself
	}
	s.snapshot = spawn(func() (err error) {
		s.neutraliseEnd()
		if s.began.err != nil || s.Provenance == nil {
			return errNoRecord
		}
		engine.Tracef("provenance: snapshot")
		s.snap, err = s.Provenance.Snapshot()
		engine.Tracef("provenance: snapshot done: %v", err)
		return err
	})
}

// errNoRecord: the session has no provenance record to read the shares for.
var errNoRecord = errors.New("no provenance record")

// endProvenance records the session's end and says what waits for review.
func (s *Session) endProvenance() {
	var snap *provenance.Snapshot
	if s.snapshot != nil && s.snapshot.wait() == nil {
		snap = s.snap // an error: the end reads the shares itself
	}
	engine.Tracef("provenance: end")
	defer engine.Tracef("provenance: ended")
	pol := &policy.Policy{}
	if b, err := s.Instance.FS().ReadFile(s.Instance.Policy(), instance.MaxTextFile); err == nil {
		if p, err := policy.Parse(s.Instance.Policy(), b); err == nil {
			pol = p
		}
	}
	r, err := s.Provenance.End(s.Name, func(ses provenance.Session) ([]string, error) {
		return readsOf(s.Instance, ses)
	}, pol.Trusts, snap)
	if err != nil {
		s.Progress("warning: the session's changes were not reviewed for provenance: %v (the next session's start holds them)", err)
		return
	}
	if s.Ended != nil {
		s.Ended(r.Session)
	}
	for _, p := range r.Problems {
		s.Progress("warning: %s", p)
	}
	if len(r.Held) > 0 {
		s.Progress("%s", word(s.Words, ChangesHeld, "session", s.Name, "why", strings.Join(r.Session.Why, ", "), "held", strconv.Itoa(len(r.Held))))
	} else if r.Waiting > 0 {
		s.Progress("%s", word(s.Words, ChangesWaiting, "waiting", strconv.Itoa(r.Waiting)))
	}
}

// readsOf reads the proxy audit log from the session's first line on.
func readsOf(in instance.Instance, ses provenance.Session) ([]string, error) {
	f, err := in.FS().Open(in.EgressAuditLog())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // no proxy wrote a line yet
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() >= ses.AuditFrom {
		if _, err := f.Seek(ses.AuditFrom, io.SeekStart); err != nil {
			return nil, fmt.Errorf("seek the proxy audit log: %w", err)
		}
	}
	return policy.ReadSince(f, ses.Name, ses.Started)
}
