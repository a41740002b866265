package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"time"
	"unicode/utf8"

	"github.com/hobbs-agent/hobbs/src/channel"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// The conversation store: one JSON file per conversation in the instance's
// chat/ directory, which no session mounts (conversations started afresh
// are kept in chat/archive/). Each file holds the last turns
// (the owner's text as the channel handed it over, the reply as the host
// read it from Claude Code's JSON result), bounded by KeepTurns and
// KeepBytes. Writes are atomic (temp file, rename) under a lock in .locks/;
// a file that does not parse is reported with its path and never
// rewritten.

// Bounds of what a conversation keeps and takes.
const (
	// KeepTurns and KeepBytes bound the turns kept: the oldest go first
	// when either is passed (the newest turn always stays).
	KeepTurns = 20
	KeepBytes = 64 << 10
	// MaxMessage is the longest owner's message a turn takes (bytes); a
	// reply longer than it is kept cut to it.
	MaxMessage = 16 << 10
)

// lockWait is how long a write waits for the store's lock.
const lockWait = 30 * time.Second

// Turn is one exchange of a conversation.
type Turn struct {
	At     time.Time        `json:"at"`
	Owner  string           `json:"owner"`            // the owner's message
	Quoted []channel.Quoted `json:"quoted,omitempty"` // someone else's text the message carried
	Reply  string           `json:"reply"`            // Hobbs's reply
	// Tainted says why the turn's session was tainted (none: it was not).
	Tainted []string `json:"tainted,omitempty"`
}

// Conversation is one conversation's file.
type Conversation struct {
	ID    string `json:"conversation"`
	Turns []Turn `json:"turns"`
	// Tainted, when set, says why the conversation is tainted: the turns
	// that were, since the owner last trusted it (Store.Trust). It stays
	// when those turns are dropped by the bounds: their replies may live
	// on in later ones.
	Tainted []string `json:"tainted,omitempty"`
}

// maxTaintReasons bounds the reasons a conversation keeps: the first ones
// and a count of the rest.
const maxTaintReasons = 8

var idRe = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// ValidID checks a conversation id, which comes from outside (a channel
// names its chats): 1 to 64 characters, lower-case letters, digits, '.',
// '_' and '-', starting with a letter or digit. It is a file name in
// chat/, so nothing else may be in it (no '/', no "..", no case that a
// case-insensitive file system would fold onto another id).
func ValidID(id string) error {
	if !idRe.MatchString(id) {
		return errs.Usagef("invalid conversation id %q: 1 to 64 lower-case letters, digits, '.', '_' or '-', starting with a letter or digit", id)
	}
	return nil
}

// Store is the conversation store of an instance.
type Store struct {
	root safefile.Root
	dir  string
	lock string
	now  func() time.Time
}

// Open returns the conversation store of in.
func Open(in instance.Instance) Store {
	return Store{root: in.FS(), dir: in.Chats(), lock: in.Lock("chat"), now: time.Now}
}

func (s Store) path(id string) string { return filepath.Join(s.dir, id+".json") }

// Load returns conversation id as it is kept: no turns when it has none
// yet. A file that cannot be read or parsed is an error naming it.
func (s Store) Load(id string) (Conversation, error) {
	if err := ValidID(id); err != nil {
		return Conversation{}, err
	}
	p := s.path(id)
	data, err := s.root.ReadFile(p, instance.MaxChatFile)
	if errors.Is(err, fs.ErrNotExist) {
		return Conversation{ID: id, Turns: []Turn{}}, nil
	}
	if err != nil {
		return Conversation{}, (&errs.Error{Code: errs.Failure, Msg: "conversation " + id, Err: err}).
			Advise(UnreadableConversation, "path", p)
	}
	var c Conversation
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil || c.ID != id || dec.More() {
		why := "its conversation is not " + id
		if err != nil {
			why = err.Error()
		} else if dec.More() {
			why = "more than one JSON value"
		}
		return Conversation{}, errs.Failf("%s does not parse as conversation %s: %s (left as it is)", p, id, why).
			Advise(UnparsableConversation)
	}
	if c.Turns == nil {
		c.Turns = []Turn{}
	}
	return c, nil
}

// Append adds turn t to conversation id, dropping the oldest turns beyond
// KeepTurns and KeepBytes, and returns the conversation as kept. It reads,
// changes and writes the file under the store's lock, so concurrent
// appends all land; a file that does not parse is left as it is and the
// turn is not kept (the error says so).
func (s Store) Append(id string, t Turn) (Conversation, error) {
	if err := ValidID(id); err != nil {
		return Conversation{}, err
	}
	for _, d := range []string{s.dir, filepath.Dir(s.lock)} {
		if err := s.root.MkdirAll(d, 0o700); err != nil {
			return Conversation{}, errs.Wrap(errs.Failure, err, "conversation store")
		}
	}
	unlock, err := s.root.Lock(s.lock, lockWait)
	if err != nil {
		return Conversation{}, errs.Wrap(errs.Failure, err, "conversation store")
	}
	defer unlock()
	c, err := s.Load(id)
	if err != nil {
		return Conversation{}, err
	}
	if t.At.IsZero() {
		t.At = s.now().UTC()
	}
	t.Owner, t.Reply = cut(t.Owner, MaxMessage), cut(t.Reply, MaxMessage)
	c.Turns = bound(append(c.Turns, t))
	for _, why := range t.Tainted {
		switch {
		case len(c.Tainted) < maxTaintReasons:
			c.Tainted = append(c.Tainted, why)
		case len(c.Tainted) == maxTaintReasons:
			c.Tainted = append(c.Tainted, "and later tainted turns")
		}
	}
	return c, s.write(c)
}

// write writes conversation c's file (under the store's lock).
func (s Store) write(c Conversation) error {
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return errs.Wrap(errs.Failure, err, "conversation %s", c.ID)
	}
	if err := s.root.Write(s.path(c.ID), append(data, '\n'), 0o600); err != nil {
		return errs.Wrap(errs.Failure, err, "conversation %s", c.ID)
	}
	return nil
}

// Trust clears conversation id's taint: its next turns do not start
// tainted for what its earlier turns read. It returns why it was tainted
// (none: it was not, and nothing is written).
func (s Store) Trust(id string) ([]string, error) {
	if err := ValidID(id); err != nil {
		return nil, err
	}
	if err := s.root.MkdirAll(filepath.Dir(s.lock), 0o700); err != nil {
		return nil, errs.Wrap(errs.Failure, err, "conversation store")
	}
	unlock, err := s.root.Lock(s.lock, lockWait)
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "conversation store")
	}
	defer unlock()
	c, err := s.Load(id)
	if err != nil || len(c.Tainted) == 0 {
		return nil, err
	}
	was := c.Tainted
	c.Tainted = nil
	return was, s.write(c)
}

// Reset starts conversation id afresh: its file moves to chat/archive/
// (named by the conversation and the time), so the next turn sees no
// earlier one and nothing is lost. It returns where the turns went ("" when
// there were none).
func (s Store) Reset(id string) (string, error) {
	if err := ValidID(id); err != nil {
		return "", err
	}
	archive := filepath.Join(s.dir, "archive")
	for _, d := range []string{archive, filepath.Dir(s.lock)} {
		if err := s.root.MkdirAll(d, 0o700); err != nil {
			return "", errs.Wrap(errs.Failure, err, "conversation store")
		}
	}
	unlock, err := s.root.Lock(s.lock, lockWait)
	if err != nil {
		return "", errs.Wrap(errs.Failure, err, "conversation store")
	}
	defer unlock()
	if _, err := s.root.Lstat(s.path(id)); errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	to := filepath.Join(archive, id+"-"+s.now().UTC().Format("20060102T150405.000000000Z")+".json")
	if err := s.root.Rename(s.path(id), to); err != nil {
		return "", errs.Wrap(errs.Failure, err, "conversation %s", id)
	}
	return to, nil
}

// bound drops the oldest turns until at most KeepTurns are left and their
// text holds at most KeepBytes; the newest turn stays whatever its size.
func bound(turns []Turn) []Turn {
	size := 0
	keep := 0
	for i := len(turns) - 1; i >= 0; i-- {
		size += turns[i].size()
		if keep > 0 && (keep == KeepTurns || size > KeepBytes) {
			break
		}
		keep++
	}
	return append([]Turn{}, turns[len(turns)-keep:]...)
}

// cutMark ends a text cut to its bound.
const cutMark = "\n[cut]"

// cut is s within max bytes, cut at a character's boundary and marked.
func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	n := max - len(cutMark)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + cutMark
}

// size is the text turn t holds, in bytes.
func (t Turn) size() int {
	n := len(t.Owner) + len(t.Reply)
	for _, q := range t.Quoted {
		n += len(q.From) + len(q.Text)
	}
	return n
}

// Size is the text a conversation holds, in bytes.
func (c Conversation) Size() int {
	n := 0
	for _, t := range c.Turns {
		n += t.size()
	}
	return n
}

func (c Conversation) String() string {
	return fmt.Sprintf("conversation %s: %d turns, %d bytes", c.ID, len(c.Turns), c.Size())
}
