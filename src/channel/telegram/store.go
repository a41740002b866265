package telegram

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hobbs-agent/hobbs/src/channel"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// The channel's host-only state, in Dir:
//
//	state.json        offset, owners, pairing codes (hashed), buttons, notice ids
//	outbox/SEQ-H.json one entry per message or edit to send, in SEQ order
//	inbox/UPDATE.json one owner chat message waiting for its turn
//	undelivered/      outbox entries a chat refused for good (blocked bot)
//	.lock             taken around every change of the above
//
// Every write is atomic (safefile.Root.Write/Create); every read is capped
// at instance.MaxChannelFile. A file that cannot be parsed is reported and
// left as it is.
type store struct {
	fs  safefile.Root
	dir string
}

const (
	stateFile      = "state.json"
	outboxDir      = "outbox"
	inboxDir       = "inbox"
	undeliveredDir = "undelivered"
	lockFile       = ".lock"
)

// keepNotices is how long a delivered notice's id is remembered, so that a
// Deliver of the same id after a restart sends nothing.
const keepNotices = 30 * 24 * time.Hour

// maxNotices bounds the remembered ids (the oldest go first).
const maxNotices = 20000

type state struct {
	// Offset is the next getUpdates offset: every update below it has been
	// handled and is acknowledged.
	Offset   int64     `json:"offset"`
	OffsetAt time.Time `json:"offset_at"` // when it was stored
	// Owners are the paired chats.
	Owners []int64 `json:"owners"`
	// Codes are the pending pairing codes.
	Codes []pairCode `json:"codes,omitempty"`
	// Buttons maps a button's callback_data to what it does.
	Buttons map[string]button `json:"buttons,omitempty"`
	// Answered holds the notices one of whose buttons was pressed.
	Answered map[string]time.Time `json:"answered,omitempty"`
	// Notices holds the ids Deliver accepted, with when.
	Notices map[string]time.Time `json:"notices,omitempty"`
	// Seq is the last outbox sequence number.
	Seq int64 `json:"seq"`
}

type pairCode struct {
	Hash    string    `json:"hash"` // sha256 of the normalised code
	Expires time.Time `json:"expires"`
}

type button struct {
	Notice  string         `json:"notice"`
	Action  channel.Action `json:"action"`
	Chat    int64          `json:"chat"`
	Message int            `json:"message"`
	Text    string         `json:"text"` // the message's text, kept to show the result under it
	Expires time.Time      `json:"expires"`
}

func (s *state) isOwner(chat int64) bool { return slices.Contains(s.Owners, chat) }

func (st store) path(elem ...string) string { return path.Join(append([]string{st.dir}, elem...)...) }

func (st store) init() error {
	for _, d := range []string{st.dir, st.path(outboxDir), st.path(inboxDir)} {
		if err := st.fs.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	return nil
}

func (st store) lock() (func(), error) { return st.fs.Lock(st.path(lockFile), 30*time.Second) }

func (st store) load() (*state, error) {
	b, err := st.fs.ReadFile(st.path(stateFile), instance.MaxChannelFile)
	s := &state{}
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, s); err != nil {
		return nil, fmt.Errorf("%s: %w (left as it is)", st.path(stateFile), err)
	}
	return s, nil
}

// update changes the state under the lock; fn's error leaves it unchanged.
func (st store) update(fn func(*state) error) error {
	unlock, err := st.lock()
	if err != nil {
		return err
	}
	defer unlock()
	s, err := st.load()
	if err != nil {
		return err
	}
	if err := fn(s); err != nil {
		return err
	}
	return st.save(s)
}

func (st store) save(s *state) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return st.fs.Write(st.path(stateFile), append(b, '\n'), 0o600)
}

// prune drops what has outlived its use: expired codes, buttons a week past
// their expiry, answers and notice ids older than keepNotices.
func (s *state) prune(now time.Time) {
	s.Codes = slices.DeleteFunc(s.Codes, func(c pairCode) bool { return !now.Before(c.Expires) })
	for k, b := range s.Buttons {
		if now.Sub(b.Expires) > 7*24*time.Hour {
			delete(s.Buttons, k)
		}
	}
	for k, t := range s.Answered {
		if now.Sub(t) > keepNotices {
			delete(s.Answered, k)
		}
	}
	for k, t := range s.Notices {
		if now.Sub(t) > keepNotices {
			delete(s.Notices, k)
		}
	}
	if len(s.Notices) > maxNotices {
		type kt struct {
			k string
			t time.Time
		}
		all := make([]kt, 0, len(s.Notices))
		for k, t := range s.Notices {
			all = append(all, kt{k, t})
		}
		sort.Slice(all, func(i, j int) bool { return all[i].t.Before(all[j].t) })
		for _, x := range all[:len(all)-maxNotices] {
			delete(s.Notices, x.k)
		}
	}
}

// entry is one message (or edit) waiting in the outbox.
type entry struct {
	ID   string `json:"id"`   // the notice id: one entry per id, ever
	Chat int64  `json:"chat"` // 0: every owner
	Text string `json:"text"`
	// Buttons become the inline keyboard of the message's last part.
	Buttons []channel.Action `json:"buttons,omitempty"`
	// Expires, when set, ends the buttons' life before ButtonTTL does.
	Expires time.Time `json:"expires,omitzero"`
	// Edit, when set, makes this entry an edit of message Edit in Chat.
	Edit int `json:"edit,omitempty"`
	// To is the chats it goes to, fixed at the first attempt.
	To []int64 `json:"to,omitempty"`
	// Done counts the parts each chat has received (by chat id).
	Done map[string]int `json:"done,omitempty"`
	// Tokens are the callback_data of each chat's buttons, made before the
	// first attempt so a retry sends the same ones.
	Tokens map[string][]string `json:"tokens,omitempty"`
	// Refused says, by chat id, why Telegram refused the message for good
	// (the owner blocked the bot, the chat is gone): no retry sends it.
	Refused map[string]string `json:"refused,omitempty"`

	name string // file name in outbox/
}

// idHash names an entry's id in its file name, so a Deliver can tell an id
// already queued from the outbox alone.
func idHash(id string) string {
	h := sha256.Sum256([]byte(id))
	return hex.EncodeToString(h[:8])
}

// enqueue adds e to the outbox unless its id was accepted before; it
// reports whether it did.
func (st store) enqueue(e *entry, now time.Time) (bool, error) {
	unlock, err := st.lock()
	if err != nil {
		return false, err
	}
	defer unlock()
	s, err := st.load()
	if err != nil {
		return false, err
	}
	if _, seen := s.Notices[e.ID]; seen {
		return false, nil
	}
	names, err := st.outboxNames()
	if err != nil {
		return false, err
	}
	h := idHash(e.ID)
	for _, n := range names {
		if strings.HasSuffix(strings.TrimSuffix(n, ".json"), "-"+h) {
			return false, nil // queued, its id not yet recorded (a crash between the two writes)
		}
	}
	b, err := json.Marshal(e)
	if err != nil {
		return false, err
	}
	for {
		s.Seq++
		name := fmt.Sprintf("%016d-%s.json", s.Seq, h)
		err = st.fs.Create(st.path(outboxDir, name), b, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return false, err
		}
		break
	}
	if s.Notices == nil {
		s.Notices = map[string]time.Time{}
	}
	s.Notices[e.ID] = now
	s.prune(now)
	return true, st.save(s)
}

func (st store) outboxNames() ([]string, error) {
	des, err := st.fs.ReadDir(st.path(outboxDir))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, d := range des {
		if d.Type().IsRegular() && strings.HasSuffix(d.Name(), ".json") && !strings.HasPrefix(d.Name(), ".") {
			names = append(names, d.Name())
		}
	}
	sort.Strings(names) // zero-padded sequence numbers: lexical order is queue order
	return names, nil
}

// readEntry reads one outbox entry.
func (st store) readEntry(name string) (*entry, error) {
	b, err := st.fs.ReadFile(st.path(outboxDir, name), instance.MaxChannelFile)
	if err != nil {
		return nil, err
	}
	e := &entry{}
	if err := json.Unmarshal(b, e); err != nil {
		return nil, fmt.Errorf("%s: %w (left as it is)", st.path(outboxDir, name), err)
	}
	e.name = name
	return e, nil
}

func (st store) writeEntry(e *entry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return st.fs.Write(st.path(outboxDir, e.name), b, 0o600)
}

func (st store) removeEntry(e *entry) error { return st.fs.Remove(st.path(outboxDir, e.name)) }

// setAside keeps an entry some chat refused in undelivered/, for the owner
// to read there (it is never sent again).
func (st store) setAside(e *entry) error {
	if err := st.fs.MkdirAll(st.path(undeliveredDir), 0o700); err != nil {
		return err
	}
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	return st.fs.Write(st.path(undeliveredDir, e.name), append(b, '\n'), 0o600)
}

// inboxItem is one owner message waiting for its chat turn.
type inboxItem struct {
	Update int64            `json:"update"`
	Chat   int64            `json:"chat"`
	Text   string           `json:"text"`
	Quoted []channel.Quoted `json:"quoted,omitempty"` // someone else's text the message carries

	name string
}

func (st store) addInbox(it inboxItem) error {
	b, err := json.Marshal(it)
	if err != nil {
		return err
	}
	err = st.fs.Create(st.path(inboxDir, fmt.Sprintf("%020d.json", it.Update)), b, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil // the update came again after a restart: it is queued already
	}
	return err
}

// nextInbox returns the oldest waiting chat message, or nil. Files it
// cannot read or parse are named in bad and skipped.
func (st store) nextInbox(bad map[string]error) (*inboxItem, error) {
	des, err := st.fs.ReadDir(st.path(inboxDir))
	if err != nil {
		return nil, err
	}
	for _, d := range des { // ReadDir sorts by name: update order
		n := d.Name()
		if !strings.HasSuffix(n, ".json") || strings.HasPrefix(n, ".") || bad[n] != nil {
			continue
		}
		if _, err := strconv.ParseInt(strings.TrimSuffix(n, ".json"), 10, 64); err != nil {
			continue
		}
		b, err := st.fs.ReadFile(st.path(inboxDir, n), instance.MaxChannelFile)
		it := &inboxItem{name: n}
		if err == nil {
			err = json.Unmarshal(b, it)
		}
		if err != nil {
			bad[n] = err
			continue
		}
		return it, nil
	}
	return nil, nil
}

func (st store) removeInbox(it *inboxItem) error { return st.fs.Remove(st.path(inboxDir, it.name)) }
