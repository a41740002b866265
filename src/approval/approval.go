// Package approval is the channel between a session's egress proxy and
// its owner for held requests (docs/egress.md, "Held requests"): a request
// to a host outside the policy waits while the owner is asked, on the host
// (hobbs approvals) or on the phone (hobbs serve's Telegram channel).
//
// The channel is a directory of small JSON files in host-only instance
// state, logs/egress/approvals (instance.Approvals), which only the proxy's
// container and the host mount — never the agent's container, so an agent
// cannot read, write or answer a question, its own or another's. It holds
// one directory per session; in it the proxy writes ID.q.json (the
// question) and the host writes ID.a.json (the answer). Every file is
// written atomically; an answer is created exclusively, under the
// directory's lock, and only for a question still open: the first answer
// wins, and whoever answers second is told what the first said, where. The
// proxy watches its directory (fsnotify, with a slow poll behind it) and
// acts on the answer; it removes a question that expires, and its
// session's whole directory when it stops, so no question outlives its
// session.
//
// The proxy is trusted (it is Hobbs's own binary, in its own container):
// what a question says of its session (its playbook, how it started,
// whether it is tainted) is its word. Everything in a question that came
// from the agent (host, path) is data to show, made safe by whoever shows
// it.
package approval

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// Answers, as the buttons and hobbs approvals name them.
const (
	Once    = "once"    // this request (and those waiting with it)
	Session = "session" // the host for the rest of the session or run
	Always  = "always"  // also written to the policy (or the playbook's run: block)
	Deny    = "deny"
)

// Limits of held requests.
const (
	MaxPerSession  = 8  // questions waiting in one session
	MaxPerInstance = 32 // questions waiting in the instance
)

// Where answers come from.
const (
	ViaHost     = "host"
	ViaTelegram = "telegram"
)

// maxFile caps a question or answer file.
const maxFile = 16 << 10

// lockName is the lock every writer of the directory takes (beneath it).
const lockName = ".lock"

// Question is one held request's question.
type Question struct {
	ID      string `json:"id"`
	Session string `json:"session"`
	// Playbook is the playbook of a run whose policy is its run: block
	// (Always adds the host there); "" for a session whose policy is the
	// instance's (Always adds it to policy.yaml).
	Playbook string    `json:"playbook,omitempty"`
	Origin   string    `json:"origin"` // how the session started: terminal, command NAME, trigger NAME, …
	Tainted  bool      `json:"tainted"`
	Why      []string  `json:"why,omitempty"` // why it is tainted
	Method   string    `json:"method"`
	Host     string    `json:"host"`
	Port     int       `json:"port"`
	Path     string    `json:"path,omitempty"` // a plain-HTTP request's path, no query
	Waiting  int       `json:"waiting"`        // requests to the host waiting on this question
	Asked    time.Time `json:"asked"`
	Expires  time.Time `json:"expires"`
	// Answers are the answers offered: Always only for an untainted
	// session.
	Answers []string `json:"answers"`
}

// Answer is the owner's answer to a question.
type Answer struct {
	ID     string    `json:"id"`
	Answer string    `json:"answer"`
	Via    string    `json:"via"` // ViaHost, ViaTelegram
	By     string    `json:"by"`  // who: the host's user, or the Telegram user id
	Time   time.Time `json:"time"`
}

// Target is the question's host and port as a policy entry writes it: the
// port left out when it is 443 (CONNECT) or 80.
func (q Question) Target() string {
	h := q.Host
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	if q.Port == 443 || q.Port == 80 {
		return h
	}
	return fmt.Sprintf("%s:%d", h, q.Port)
}

// Offers reports whether answer a is offered.
func (q Question) Offers(a string) bool {
	for _, x := range q.Answers {
		if x == a {
			return true
		}
	}
	return false
}

// OffersFor is the answers offered a session tainted or not.
func OffersFor(tainted bool) []string {
	if tainted {
		return []string{Once, Session, Deny}
	}
	return []string{Once, Session, Always, Deny}
}

var (
	idRe      = regexp.MustCompile(`^[a-z2-7]{12}$`)
	sessionRe = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,127}$`)
)

// NewID is a fresh question id: 12 random base32 letters.
func NewID() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz234567"
	var b [12]byte
	rand.Read(b[:])
	for i := range b {
		b[i] = alphabet[b[i]%32]
	}
	return string(b[:])
}

// ValidID reports whether id is a question id.
func ValidID(id string) bool { return idRe.MatchString(id) }

// Dir is the approvals directory, opened beneath its root (the host's:
// instance.Approvals; the proxy's: its mount of it).
type Dir struct {
	Root safefile.Root
	Now  func() time.Time
}

func (d Dir) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

// Lock takes the directory's lock (every writer's).
func (d Dir) Lock() (func(), error) {
	if err := d.Root.MkdirAll(".", 0o700); err != nil {
		return nil, err
	}
	return d.Root.Lock(lockName, 10*time.Second)
}

func qName(session, id string) string { return session + "/" + id + ".q.json" }
func aName(session, id string) string { return session + "/" + id + ".a.json" }

// WriteQuestion writes (or rewrites) q, atomically. The caller holds the
// lock for a new question (the instance's limit counts them).
func (d Dir) WriteQuestion(q Question) error {
	if !ValidID(q.ID) || !sessionRe.MatchString(q.Session) {
		return fmt.Errorf("approval: bad question id or session")
	}
	if err := d.Root.MkdirAll(q.Session, 0o700); err != nil {
		return err
	}
	b, err := json.Marshal(q)
	if err != nil {
		return err
	}
	return d.Root.Write(qName(q.Session, q.ID), b, 0o600)
}

// RemoveQuestion removes a question (expired, or its session ending).
func (d Dir) RemoveQuestion(session, id string) {
	d.Root.Remove(qName(session, id))
}

// RemoveSession removes a session's directory: its questions end with it.
func (d Dir) RemoveSession(session string) error {
	if !sessionRe.MatchString(session) {
		return fmt.Errorf("approval: bad session name")
	}
	return d.Root.RemoveAll(session)
}

// ReadAnswer reads the answer to session's question id, if there is one.
func (d Dir) ReadAnswer(session, id string) (Answer, bool, error) {
	b, err := d.Root.ReadFile(aName(session, id), maxFile)
	if errors.Is(err, fs.ErrNotExist) {
		return Answer{}, false, nil
	}
	if err != nil {
		return Answer{}, false, err
	}
	var a Answer
	if err := json.Unmarshal(b, &a); err != nil || a.ID != id {
		return Answer{}, false, fmt.Errorf("%s: not an answer: %v", aName(session, id), err)
	}
	switch a.Answer {
	case Once, Session, Always, Deny:
	default:
		return Answer{}, false, fmt.Errorf("%s: unknown answer %q", aName(session, id), a.Answer)
	}
	return a, true, nil
}

// Entry is a question as the directory holds it.
type Entry struct {
	Question
	Answer   *Answer `json:"answer,omitempty"`
	Expired  bool    `json:"expired,omitempty"`
	Problem  string  `json:"-"` // the file could not be read
	FilePath string  `json:"-"`
}

// Open reports whether the question waits for an answer.
func (e Entry) Open() bool { return e.Problem == "" && e.Answer == nil && !e.Expired }

// All lists every question in the directory, oldest first; a file that
// cannot be read is an entry with its Problem.
func (d Dir) All() ([]Entry, error) {
	sessions, err := d.Root.ReadDir(".")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	now := d.now()
	var out []Entry
	for _, s := range sessions {
		if !s.IsDir() || !sessionRe.MatchString(s.Name()) {
			continue
		}
		files, err := d.Root.ReadDir(s.Name())
		if err != nil {
			continue // removed as its session ended
		}
		for _, f := range files {
			id, ok := strings.CutSuffix(f.Name(), ".q.json")
			if !ok || !ValidID(id) {
				continue
			}
			out = append(out, d.entry(s.Name(), id, now))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Asked.Before(out[j].Asked) })
	return out, nil
}

func (d Dir) entry(session, id string, now time.Time) Entry {
	e := Entry{FilePath: qName(session, id)}
	e.ID, e.Session = id, session
	b, err := d.Root.ReadFile(qName(session, id), maxFile)
	if err != nil {
		e.Problem = err.Error()
		return e
	}
	var q Question
	if err := json.Unmarshal(b, &q); err != nil {
		e.Problem = "not a question: " + err.Error()
		return e
	}
	if q.ID != id || q.Session != session {
		e.Problem = "its id or session is not its name's"
		return e
	}
	e.Question = q
	if a, ok, err := d.ReadAnswer(session, id); err != nil {
		e.Problem = err.Error()
	} else if ok {
		e.Answer = &a
	}
	e.Expired = !now.Before(q.Expires)
	return e
}

// Waiting lists the open questions, oldest first, and the files that
// could not be read (path: reason).
func (d Dir) Waiting() ([]Question, []string, error) {
	all, err := d.All()
	if err != nil {
		return nil, nil, err
	}
	var qs []Question
	var problems []string
	for _, e := range all {
		switch {
		case e.Problem != "":
			problems = append(problems, e.FilePath+": "+e.Problem)
		case e.Open():
			qs = append(qs, e.Question)
		}
	}
	return qs, problems, nil
}

// Find finds question id in any session.
func (d Dir) Find(id string) (Entry, error) {
	if !ValidID(id) {
		return Entry{}, errs.Usagef("%q is not a question id (hobbs approvals lists them)", id).Advise(NotFound, "id", id)
	}
	sessions, err := d.Root.ReadDir(".")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Entry{}, err
	}
	for _, s := range sessions {
		if s.IsDir() && sessionRe.MatchString(s.Name()) && d.Root.Exists(qName(s.Name(), id)) {
			e := d.entry(s.Name(), id, d.now())
			if e.Problem != "" {
				return e, errs.Failf("%s: %s", e.FilePath, e.Problem)
			}
			return e, nil
		}
	}
	return Entry{}, errs.Missingf("no question %s: it expired, or its session ended", id).Advise(NotFound, "id", id)
}

// Give records answer a (Once, Session, Always or Deny) to question id,
// given via where by whom, if the question is still open: under the lock,
// the first answer wins. before runs, under the lock, once the question is
// known to be open and before the answer is written (Always writes the
// policy there; an error leaves the question unanswered). A question
// answered already is an error with the answer (AlreadyAnswered), one that
// expired or whose session ended is NotFound; Always to a question that
// does not offer it (a tainted session) is refused.
func (d Dir) Give(id, a, via, by string, before func(Question) error) (Question, Answer, error) {
	switch a {
	case Once, Session, Always, Deny:
	default:
		return Question{}, Answer{}, errs.Usagef("%q is not an answer: once, session, always or deny", a)
	}
	unlock, err := d.Lock()
	if err != nil {
		return Question{}, Answer{}, errs.Wrap(errs.Failure, err, "approvals lock")
	}
	defer unlock()
	e, err := d.Find(id)
	if err != nil {
		return Question{}, Answer{}, err
	}
	q := e.Question
	if e.Answer != nil {
		return q, *e.Answer, errs.Failf("question %s was answered already: %s, on the %s", id, e.Answer.Answer, e.Answer.Via).
			Advise(AlreadyAnswered, "answer", e.Answer.Answer, "via", e.Answer.Via)
	}
	if e.Expired {
		return q, Answer{}, errs.Missingf("question %s expired: the request was refused", id).Advise(NotFound, "id", id)
	}
	if !q.Offers(a) {
		why := strings.Join(q.Why, "; ")
		return q, Answer{}, errs.Usagef("%s is not offered for question %s: its session is tainted (%s)", a, id, why).
			Advise(NotOffered, "answer", a)
	}
	if before != nil {
		if err := before(q); err != nil {
			return q, Answer{}, err
		}
	}
	ans := Answer{ID: id, Answer: a, Via: via, By: by, Time: d.now().UTC()}
	b, _ := json.Marshal(ans)
	if err := d.Root.Create(aName(q.Session, id), b, 0o600); err != nil {
		return q, Answer{}, errs.Wrap(errs.Failure, err, "write the answer")
	}
	return q, ans, nil
}

// OpenCount is the number of open questions in the directory, for the
// instance's limit; the caller holds the lock.
func (d Dir) OpenCount() int {
	all, _ := d.All()
	n := 0
	for _, e := range all {
		if e.Open() {
			n++
		}
	}
	return n
}
