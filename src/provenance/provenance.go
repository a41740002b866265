// Package provenance keeps, on the host, the record of where each session's
// changes to the agent-writable shares came from, and holds what a tainted
// session changed until the owner reviews it.
//
// A session is tainted when it received untrusted input: it was started by
// something other than its owner (a trigger), or its proxy passed it a
// response from a host that is not trusted (Claude's own API and the hosts
// policy.yaml lists under trusted:). Taint is decided from the host's records
// only — the session's start and its own proxy's audit lines — never from
// anything in the agent's shares.
//
// The shares watched are memory/ (the memory files of both tiers),
// playbooks/ (the playbooks), skills/ and agents/ (every file). The store
// keeps a baseline: the state of those files the owner's sessions and the
// owner's own edits produced, with a copy of each file's content. When a
// session ends, the files that differ from the baseline are its changes
// (and those of every other session live at that moment: the host cannot
// tell two concurrent sessions' writes apart). When any of those sessions is
// tainted, each change is held: the changed file is moved into the store and
// the baseline's content put back, so later sessions, sub-agents, playbook
// runs and host tools all see the state before it — no reader has to know of
// the quarantine. Otherwise the changes become the new baseline.
//
// The owner approves a held change (its content goes back in place) or
// rejects it (it stays out of the shares, kept in the store for inspection):
// hobbs review. Everything lives in the instance's provenance/ directory,
// which no session mounts.
package provenance

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/layer"
	"github.com/hobbs-agent/hobbs/src/memory"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// Dir is the store's directory in the instance: host-only, like grants/.
const Dir = "provenance"

// Shares are the agent-writable directories whose changes are reviewed.
var Shares = []string{"memory", "playbooks", "skills", "agents"}

// maxFile caps the bytes of one watched file the store copies and hashes; a
// larger file is a change whatever it holds, and is never copied into the
// baseline.
const maxFile = 8 << 20

// maxState caps provenance/state.json (host-only; about 300 bytes per
// watched file).
const maxState = 512 << 20

// Origin says who started a session.
type Origin struct {
	Kind string `json:"kind"`           // OriginTerminal, OriginCommand, OriginSchedule, OriginTrigger, OriginChat
	Name string `json:"name,omitempty"` // the playbook, schedule, trigger or conversation
	// Untrusted, when set, says why the session starts tainted though its
	// kind does not: a chat turn of a conversation that holds a tainted
	// turn, or whose message carries text from someone else.
	Untrusted string `json:"untrusted,omitempty"`
}

// Origins of a session.
const (
	OriginTerminal = "terminal" // hobbs run by the owner
	OriginCommand  = "command"  // hobbs playbook run by the owner
	OriginSchedule = "schedule" // a schedule the owner made
	OriginTrigger  = "trigger"  // an event from outside (a webhook): untrusted input by itself
	// OriginChat is a turn of the owner's conversation from a channel: the
	// channel hands on only the paired owner's messages, so it is the
	// owner's input, not tainted by itself (what the turn reads is, as
	// for any session).
	OriginChat = "chat"
	// OriginMail is a mail message a mail trigger took (its sender
	// checked, its content not): untrusted input, as a webhook's.
	OriginMail = "mail"
)

// StartTaint says why a session of origin o is tainted from its start, or
// "": one a trigger or a mail message started (untrusted input by
// itself), or one whose start carries untrusted input (Untrusted). The
// host's record (Begin) and the proxy's questions (egress) both decide it
// here.
func (o Origin) StartTaint() string {
	switch {
	case o.Kind == OriginTrigger || o.Kind == OriginMail:
		return "started by " + o.String()
	case o.Untrusted != "":
		return o.Untrusted
	}
	return ""
}

func (o Origin) String() string {
	if o.Name == "" {
		return o.Kind
	}
	return o.Kind + " " + o.Name
}

// Session is the host's record of one session.
type Session struct {
	Name    string    `json:"name"`
	Origin  Origin    `json:"origin"`
	Owner   string    `json:"owner,omitempty"` // the launcher that runs it
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended,omitzero"`
	Tainted bool      `json:"tainted"`
	Why     []string  `json:"why,omitempty"`  // why it is tainted
	Read    []string  `json:"read,omitempty"` // the hosts whose responses it received
	// AuditFrom is where its proxy's lines start in the proxy audit log
	// (the log's size when it began).
	AuditFrom int64 `json:"audit_from,omitempty"`
	// Layered: its writes go to private layers (layer.go), never to the
	// shares in effect, so the shares' changes while it is open are not
	// its own.
	Layered bool `json:"layered,omitempty"`
}

// Item is one held change.
type Item struct {
	ID       string    `json:"id"`
	Path     string    `json:"path"`   // slash-separated, relative to the instance
	Kind     string    `json:"kind"`   // memory, playbook, skill, agent
	Change   string    `json:"change"` // created, changed, removed
	Before   string    `json:"before,omitempty"`
	After    string    `json:"after,omitempty"` // the held file's hash; "" when removed
	Sessions []Session `json:"sessions"`        // the sessions live when it was found
	Found    time.Time `json:"found"`
	Status   string    `json:"status"` // waiting, approved, rejected
	Decided  time.Time `json:"decided,omitzero"`
	Exec     bool      `json:"exec,omitempty"` // the held file's owner could run it (a script): approved so
	// Workspace, for an instruction file of a session's workspace (held
	// from a tainted session: layer.go), is that workspace; Path is then
	// relative to it.
	Workspace string `json:"workspace,omitempty"`
	// Volume, for a file of the Claude Code user scope on an instance's
	// state volume (userscope.go), is that volume; Path is then relative
	// to the scope's directory. The host cannot write the volume: an
	// approval marks the item Pending, and the next session's start
	// writes it there (ScopeApplied).
	Volume  string `json:"volume,omitempty"`
	Pending bool   `json:"pending,omitempty"`
}

// Item states.
const (
	Waiting  = "waiting"
	Approved = "approved"
	Rejected = "rejected"
)

// fileState is what the baseline knows of one file: its content's hash and
// the inode facts that change whenever the content does (the change time
// cannot be set by a process), so an unchanged file is not read again.
type fileState struct {
	Hash  string `json:"hash"`
	Size  int64  `json:"size"`
	Ino   uint64 `json:"ino"`
	Ctime int64  `json:"ctime"`
	Mtime int64  `json:"mtime"`
	Mode  uint32 `json:"mode"`
	Racy  bool   `json:"racy,omitempty"` // changed within racyWindow of its scan
}

func (a fileState) sameInode(b fileState) bool {
	return !a.Racy && a.Size == b.Size && a.Ino == b.Ino && a.Ctime == b.Ctime && a.Mtime == b.Mtime && a.Mode == b.Mode
}

// racyWindow: a file changed this close to the scan that read it may change
// again within the same tick of the file system's clock, keeping its
// inode facts; its content is read again at the next scan.
const racyWindow = 2 * time.Second

// state is provenance/state.json.
type state struct {
	Version int                 `json:"version"`
	Open    map[string]*Session `json:"open"` // sessions begun and not ended
	Items   []*Item             `json:"items"`
	Next    int                 `json:"next"`  // the next item's number
	Packs   int                 `json:"packs"` // packs written so far
	// BaselineGen names the file (baselines/N) that holds Baseline and
	// Objects (baseline.go).
	BaselineGen int `json:"baseline_gen"`
	// Transcripts are the Claude Code conversation transcripts (paths
	// relative to the state volume's directory) that tainted sessions
	// wrote, each with the first such session (userscope.go).
	Transcripts map[string]string `json:"transcripts,omitempty"`

	Baseline map[string]fileState `json:"-"`
	// Objects locate each kept content (by hash) in the packs.
	Objects map[string]objRef `json:"-"`

	baselineRaw []byte // the baseline file as read
	// lazy: Baseline and Objects are not decoded from baselineRaw yet
	// (decode). A session's start and end whose shares are as the
	// baseline records them never decode them (sameAsBaseline).
	lazy bool
	pack *packWriter // what this change of the state keeps
	// scanned is a Snapshot's scan of the shares, which the first settle
	// uses instead of reading them again; scannedSame, that the snapshot
	// found them as the baseline records them.
	scanned     map[string]fileState
	scannedSame bool
	// listing, under lockedListing, returns the listing of the shares
	// made while the state was read.
	listing func() *listing
	// loaded is what the baseline file held, and what the items were,
	// when the state was read: a save that changed none of them neither
	// prunes nor writes the baseline.
	loaded *loadedState
	// memoryLocked: this change of the state holds memory/.lock already
	// (lockShares), so stamp does not take it again.
	memoryLocked bool
	// after are called, last first, once this change of the state is
	// saved or has failed (saved false: nothing of it was recorded).
	after []func(saved bool)
}

type loadedState struct {
	baseline map[string]fileState // nil while the state is lazy
	objects  map[string]objRef
	items    string
}

// loadedOf records st as read (its baseline only once it is decoded).
func loadedOf(st *state) *loadedState {
	l := &loadedState{items: itemsKey(st.Items)}
	if !st.lazy {
		l.baseline, l.objects = maps.Clone(st.Baseline), maps.Clone(st.Objects)
	}
	return l
}

// itemsKey sums up what of the items decides which contents are kept.
func itemsKey(items []*Item) string {
	var b strings.Builder
	for _, it := range items {
		b.WriteString(it.ID + " " + it.Status + " " + it.Before + "\n")
	}
	return b.String()
}

// unchanged reports whether st's baseline, objects and items are as read
// from a baseline file (a lazy state's baseline and objects are: nothing
// decoded them).
func (st *state) unchanged() bool {
	l := st.loaded
	if l == nil || st.BaselineGen == 0 || l.items != itemsKey(st.Items) {
		return false
	}
	return st.lazy || maps.Equal(l.baseline, st.Baseline) && maps.Equal(l.objects, st.Objects)
}

// stateV1 is state.json's version 1, which held the baseline and the
// objects itself; a store of that version is read and saved as version 2.
type stateV1 struct {
	Baseline map[string]fileState `json:"baseline"`
	Objects  map[string]objRef    `json:"objects"`
}

// Store is an instance's provenance store.
type Store struct {
	Root  safefile.Root // the instance
	Audit *audit.Logger
	Now   func() time.Time
	// LockPath is the store's lock (host-only: .locks/).
	LockPath string
	// sessionList is set inside a session (ForReview): the store lists
	// the host's read-only list and does nothing else.
	sessionList string

	// last is the state this Store saved last, with the bytes it wrote:
	// a session's begin, snapshot and end in one launcher read the store
	// once while no other process changes it.
	mu   sync.Mutex
	last *savedState
}

type savedState struct {
	raw []byte
	st  *state
}

// take returns the state last saved when state.json still holds raw, for
// the caller's use alone (the store drops it), or nil.
func (s *Store) take(raw []byte) *state {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.last
	s.last = nil
	if l == nil || raw == nil || !bytes.Equal(l.raw, raw) {
		return nil
	}
	l.st.loaded = loadedOf(l.st)
	return l.st
}

// keep makes st, just saved as raw, the state last saved.
func (s *Store) keep(raw []byte, st *state) {
	st.pack, st.scanned, st.loaded, st.listing = nil, nil, nil, nil
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = &savedState{raw: raw, st: st}
}

// New returns the store of the instance at root.
func New(root safefile.Root, log *audit.Logger) *Store {
	return &Store{Root: root, Audit: log, Now: time.Now, LockPath: filepath.Join(root.Dir(), ".locks", "provenance.lock")}
}

func (s *Store) rel(p ...string) string {
	return filepath.Join(append([]string{s.Root.Dir(), Dir}, p...)...)
}

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

// locked runs f with the store's state loaded, under its lock, and saves
// the state when f returns without error: first the pack of the contents
// f kept (synced), then the state naming them (atomically).
func (s *Store) locked(f func(st *state) error) error {
	return s.lockedFrom(nil, false, func(st *state) error {
		if err := s.decode(st); err != nil {
			return err
		}
		return f(st)
	})
}

// lockedListing is locked, listing the shares while the state is read
// (st.listing), with the state lazy: f decodes it if it needs it.
func (s *Store) lockedListing(f func(st *state) error) error {
	return s.lockedFrom(nil, true, f)
}

// lockedFrom is locked with the state lazy (f decodes it if it needs it),
// starting from snap's state when state.json is still the one snap read (no
// change of the store came between): the state is then not read again, and
// the first settle uses snap's scan of the shares.
func (s *Store) lockedFrom(snap *Snapshot, list bool, f func(st *state) error) error {
	if err := s.Root.MkdirAll(s.rel("packs"), 0o700); err != nil {
		return errs.Wrap(errs.Failure, err, "provenance store")
	}
	if err := s.Root.MkdirAll(filepath.Dir(s.LockPath), 0o700); err != nil {
		return errs.Wrap(errs.Failure, err, "provenance lock")
	}
	unlock, err := s.Root.Lock(s.LockPath, time.Minute)
	if err != nil {
		return errs.Wrap(errs.Failure, err, "the provenance store is busy")
	}
	defer unlock()
	var listed chan *listing
	if list {
		listed = make(chan *listing, 1)
		go func() { listed <- s.list() }()
		// f need not take it, but the lock is held until it is done.
		defer func() { <-listed }()
	}
	raw, err := s.readState()
	if err != nil {
		return err
	}
	var st *state
	if snap != nil && bytes.Equal(raw, snap.raw) {
		st = snap.st
		st.scanned, st.scannedSame = snap.cur, snap.same
	} else if st = s.take(raw); st == nil {
		if st, err = s.parse(raw, parseLazy); err != nil {
			return err
		}
	}
	st.pack = &packWriter{s: s, st: st}
	defer st.pack.abort()
	if listed != nil {
		var l *listing
		st.listing = func() *listing {
			if l == nil {
				l = <-listed
				listed <- l
			}
			return l
		}
	}
	err = f(st)
	after, saved := st.after, false
	st.after = nil
	defer func() {
		for i := len(after) - 1; i >= 0; i-- {
			after[i](saved)
		}
	}()
	if err != nil {
		return err
	}
	if err := st.pack.finish(); err != nil {
		return err
	}
	var unused []int
	oldBaseline := 0
	if !st.unchanged() {
		if err := s.decode(st); err != nil {
			return err
		}
		unused = s.prune(st)
		if oldBaseline, err = s.saveBaseline(st); err != nil {
			return err
		}
	}
	st.Version = 2
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if err := s.Root.Write(s.rel("state.json"), b, 0o600); err != nil {
		return err
	}
	saved = true
	s.keep(b, st)
	s.removeBaseline(oldBaseline)
	for _, n := range unused {
		_ = s.Root.Remove(s.packPath(n)) // a pack left behind only takes room
	}
	return nil
}

// load reads state.json and the baseline it names; a missing state.json
// is an empty store. One it cannot read is reported and left as it is.
func (s *Store) load() (*state, error) {
	raw, err := s.readState()
	if err != nil {
		return nil, err
	}
	return s.parse(raw, parseAll)
}

// readState returns state.json's bytes (nil when there is none).
func (s *Store) readState() ([]byte, error) {
	b, err := s.Root.ReadFile(s.rel("state.json"), maxState)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "read the provenance store")
	}
	return b, nil
}

// What parse reads besides state.json.
const (
	parseItems = iota // nothing: listing what waits needs only the items
	parseLazy         // the baseline file, not decoded (decode)
	parseAll          // the baseline file, decoded
)

// parse decodes state.json's bytes (nil: an empty store), with the
// baseline file it names as what says.
func (s *Store) parse(b []byte, what int) (*state, error) {
	st := &state{Version: 1, Baseline: map[string]fileState{}, Open: map[string]*Session{}, Objects: map[string]objRef{}}
	if b == nil {
		return st, nil
	}
	if err := json.Unmarshal(b, st); err != nil || (st.Version != 1 && st.Version != 2) {
		if err == nil {
			err = fmt.Errorf("version %d", st.Version)
		}
		return nil, cannotRead(s.rel("state.json"), err)
	}
	if st.Version == 1 {
		var v1 stateV1
		if err := json.Unmarshal(b, &v1); err != nil {
			return nil, cannotRead(s.rel("state.json"), err)
		}
		if v1.Baseline != nil {
			st.Baseline = v1.Baseline
		}
		if v1.Objects != nil {
			st.Objects = v1.Objects
		}
	} else if what != parseItems {
		if err := s.readBaseline(st); err != nil {
			return nil, err
		}
		st.loaded = loadedOf(st)
		if what == parseAll {
			if err := s.decode(st); err != nil {
				return nil, err
			}
		}
	}
	if st.Open == nil {
		st.Open = map[string]*Session{}
	}
	return st, nil
}

// decode decodes a lazy state's baseline file into its Baseline and
// Objects; the state as read (loaded) then records them too.
func (s *Store) decode(st *state) error {
	if !st.lazy {
		return nil
	}
	if err := decodeBaseline(st.baselineRaw, st); err != nil {
		return cannotRead(s.baselinePath(st.BaselineGen), err)
	}
	st.lazy = false
	if st.loaded != nil {
		st.loaded.baseline, st.loaded.objects = maps.Clone(st.Baseline), maps.Clone(st.Objects)
	}
	return nil
}

// cannotRead is the error for a file of the store that does not parse: it
// is reported and left as it is.
func cannotRead(p string, err error) error {
	return &errs.Error{Code: errs.Failure, Msg: fmt.Sprintf("%s: cannot read it (%v); it is left as it is", p, err),
		Advice: errs.NewAdvice(CannotRead)}
}

// Watched reports whether rel (slash-separated, relative to the instance)
// is a file whose changes are reviewed, and of what kind.
func Watched(rel string) (kind string, ok bool) {
	share, rest, nested := strings.Cut(rel, "/")
	dir, base, deeper := strings.Cut(rest, "/")
	if !deeper {
		dir, base = "", rest
	}
	md := strings.HasSuffix(base, ".md") && !strings.HasPrefix(base, ".")
	switch share {
	case "memory":
		return "memory", deeper && !strings.Contains(base, "/") && (dir == "active" || dir == "archive") && md
	case "playbooks":
		return "playbook", nested && !deeper && md
	case "skills":
		return "skill", nested && (deeper || base != ".lock")
	case "agents":
		return "agent", nested && (deeper || base != ".lock")
	}
	return "", false
}

// scanAll lists the shares and returns the state of every watched file,
// reading only those whose inode facts differ from the baseline's; same
// (with no states) when the shares are as a lazy state's baseline records
// them, which then stays undecoded.
func (s *Store) scanAll(st *state) (cur map[string]fileState, same bool, err error) {
	l := s.list()
	if st.lazy && sameAsBaseline(st.baselineRaw, l) {
		return nil, true, nil
	}
	if err := s.decode(st); err != nil {
		return nil, false, err
	}
	cur, err = s.compare(st, st.Baseline, false, l)
	return cur, false, err
}

// listing is the watched files of the shares with their inode facts.
type listing struct {
	start time.Time // when the listing began
	files []listed
	err   error
}

type listed struct {
	rel string
	fst fileState // no hash yet
}

// list lists the watched files of the shares.
func (s *Store) list() *listing {
	l := &listing{start: s.now(), files: make([]listed, 0, 1024)}
	for _, share := range Shares {
		err := s.Root.StatTree(share, func(p string, fi fs.FileInfo) error {
			if fi.IsDir() {
				return nil
			}
			rel := share + "/" + p
			if _, ok := Watched(rel); ok {
				l.files = append(l.files, listed{rel, statOf(fi)})
			}
			return nil
		})
		if err != nil {
			l.err = errs.Wrap(errs.Failure, err, "read the shares for provenance")
			return l
		}
	}
	return l
}

// compare returns the state of each file of l, reading only those whose
// inode facts differ from prev's, and copying each new content into the
// object store when keep is set.
func (s *Store) compare(st *state, prev map[string]fileState, keep bool, l *listing) (map[string]fileState, error) {
	if l.err != nil {
		return nil, l.err
	}
	cur := make(map[string]fileState, len(l.files))
	for _, f := range l.files {
		fst := f.fst
		if old, ok := prev[f.rel]; ok && old.sameInode(fst) {
			cur[f.rel] = old
			continue
		}
		var err error
		if fst.Hash, err = s.hash(st, f.rel, fst, keep); errors.Is(err, fs.ErrNotExist) {
			continue // removed since it was listed
		} else if err != nil {
			return nil, errs.Wrap(errs.Failure, err, "read the shares for provenance")
		}
		fst.Racy = fst.Racy || fst.Ctime >= l.start.Add(-racyWindow).UnixNano()
		cur[f.rel] = fst
	}
	return cur, nil
}

func statOf(fi fs.FileInfo) fileState {
	f := fileState{Size: fi.Size(), Mode: uint32(fi.Mode())}
	switch st := fi.Sys().(type) {
	case *unix.Stat_t: // safefile's FileInfo
		f.Ino, f.Ctime, f.Mtime = uint64(st.Ino), st.Ctim.Nano(), st.Mtim.Nano()
	default:
		f.Racy = true // without inode facts, always read the content
	}
	return f
}

// hash names a file's content: the SHA-256 of a regular file no larger
// than maxFile (kept in the store's pack when keep is set), else a name
// that no content has, so that the file always counts as changed.
func (s *Store) hash(st *state, rel string, fst fileState, keep bool) (string, error) {
	if mode := fs.FileMode(fst.Mode); !mode.IsRegular() {
		return fmt.Sprintf("special:%s:%d", mode.Type(), fst.Size), nil
	}
	if fst.Size > maxFile {
		return fmt.Sprintf("large:%d:%d", fst.Size, fst.Ctime), nil
	}
	b, err := s.Root.ReadFile(rel, maxFile)
	if err != nil {
		return "", err
	}
	if len(b) > maxFile {
		return fmt.Sprintf("large:%d:%d", len(b), fst.Ctime), nil
	}
	sum := sha256.Sum256(b)
	h := hex.EncodeToString(sum[:])
	if keep {
		if err := st.pack.put(h, b); err != nil {
			return "", err
		}
	}
	return h, nil
}

// keepFile puts the content of the file at rel, which must hash to h, in
// the store's pack.
func (s *Store) keepFile(st *state, rel, h string) error {
	if _, ok := st.Objects[h]; ok || len(h) != 64 {
		return nil
	}
	b, err := s.Root.ReadFile(rel, maxFile)
	if err != nil {
		return err
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != h {
		return fmt.Errorf("%s changed while it was read", rel)
	}
	return st.pack.put(h, b)
}

// Begin records that session name starts, started as origin by the
// launcher owner. With no other session open (sessions whose launcher is
// gone, as alive tells, are ended first, as tainted), the shares hold only
// what the owner's sessions and the owner made: they become the baseline.
func (s *Store) Begin(name string, origin Origin, owner string, auditFrom int64, alive func(owner string) bool) error {
	return s.lockedListing(func(st *state) error {
		l := st.listing()
		for _, o := range sortedOpen(st) {
			if o.Name != name && alive != nil && alive(o.Owner) {
				continue
			}
			o.Tainted = true
			o.Why = appendOnce(o.Why, "its launcher stopped before it recorded the session's end")
			if _, _, err := s.settle(st, o); err != nil {
				return err
			}
			l = nil // what it held changed the shares since the listing
		}
		if len(st.Open) == 0 {
			if l == nil {
				l = s.list()
			}
			// Shares as the baseline records them leave it as it is.
			if !st.lazy || !sameAsBaseline(st.baselineRaw, l) {
				if err := s.decode(st); err != nil {
					return err
				}
				cur, err := s.compare(st, st.Baseline, true, l)
				if err != nil {
					return err
				}
				st.Baseline = cur
			}
		}
		ses := &Session{Name: name, Origin: origin, Owner: owner, Started: s.now(), AuditFrom: auditFrom}
		if why := origin.StartTaint(); why != "" {
			ses.Tainted = true
			ses.Why = []string{why}
		}
		st.Open[name] = ses
		return nil
	})
}

// Reads is what a session's proxy passed it: the hosts (host:port) whose
// responses reached it, found in the proxy's audit log. An error (the log
// cannot be read) taints the session: what it read is not known.
type Reads func(Session) ([]string, error)

// Result is what End found.
type Result struct {
	Session Session
	Held    []*Item // changes held for review
	Kept    int     // changes that became the baseline
	Waiting int     // items waiting in all
	// Problems are changes that could not be held (left in place, out of
	// the baseline: the next session's end finds them again).
	Problems []string
	// Unheld are the changes of a layered session's end that could not be
	// held: the caller keeps the layers they are in.
	Unheld []LayerChange
}

// Snapshot is the store's state and the shares as they were when it was
// taken: a session's end can read the shares once its agent cannot write
// to them (its container is gone), while the launcher still waits
// for the proxy whose audit decides the session's taint.
type Snapshot struct {
	raw  []byte // state.json as read
	st   *state
	cur  map[string]fileState
	same bool // the shares were as the baseline records them (cur is nil)
}

// Snapshot reads the store's state and the shares, without the lock: End
// uses it only if no change of the store came after it (any change rewrites
// state.json). A change another live session makes in the shares after it
// is that session's, found when it ends.
func (s *Store) Snapshot() (*Snapshot, error) {
	raw, err := s.readState()
	if err != nil {
		return nil, err
	}
	st := s.take(raw)
	if st == nil {
		if st, err = s.parse(raw, parseLazy); err != nil {
			return nil, err
		}
	}
	cur, same, err := s.scanAll(st)
	if err != nil {
		return nil, err
	}
	return &Snapshot{raw: raw, st: st, cur: cur, same: same}, nil
}

// End records that session name ended: it decides the session's taint (and
// that of every session still open) from reads and trusted, then compares
// the shares (as snap found them, when it is set and still current) with
// the baseline and holds or keeps each change.
func (s *Store) End(name string, reads Reads, trusted func(host string) bool, snap *Snapshot) (Result, error) {
	var res Result
	err := s.lockedFrom(snap, false, func(st *state) error {
		ses := st.Open[name]
		if ses == nil {
			return errs.Failf("provenance: session %s has no record of its start", name)
		}
		for _, o := range st.Open {
			taint(o, reads, trusted)
		}
		before := len(st.Items)
		kept, problems, err := s.settle(st, ses)
		if err != nil {
			return err
		}
		res = Result{Session: *ses, Held: st.Items[before:], Kept: kept, Problems: problems}
		for _, it := range st.Items {
			if it.Status == Waiting {
				res.Waiting++
			}
		}
		return nil
	})
	return res, err
}

// taint marks o tainted by each untrusted host its proxy passed it.
func taint(o *Session, reads Reads, trusted func(string) bool) {
	if reads == nil {
		return
	}
	hosts, err := reads(*o)
	if err != nil {
		o.Tainted = true
		o.Why = appendOnce(o.Why, "what it read is not known: "+err.Error())
	}
	for _, hp := range hosts {
		o.Read = appendOnce(o.Read, hp)
		host := hp
		if h, _, ok := strings.Cut(hp, ":"); ok && !strings.Contains(h, "[") {
			host = h
		} else if i := strings.LastIndex(hp, ":"); i > 0 {
			host = strings.Trim(hp[:i], "[]")
		}
		if trusted == nil || !trusted(host) {
			o.Tainted = true
			o.Why = appendOnce(o.Why, "read from "+hp)
		}
	}
}

func appendOnce(l []string, v string) []string {
	for _, x := range l {
		if x == v {
			return l
		}
	}
	return append(l, v)
}

func sortedOpen(st *state) []*Session {
	var l []*Session
	for _, o := range st.Open {
		l = append(l, o)
	}
	sort.Slice(l, func(i, j int) bool { return l[i].Name < l[j].Name })
	return l
}

// settle ends ses: the files that differ from the baseline are the changes
// of ses and of every session still open; when any of them is tainted each
// change is held, else the changes become the baseline. It returns how many
// changes became the baseline.
func (s *Store) settle(st *state, ses *Session) (int, []string, error) {
	ses.Ended = s.now()
	delete(st.Open, ses.Name)
	live := []Session{*ses}
	tainted := ses.Tainted && !ses.Layered
	for _, o := range sortedOpen(st) {
		if o.Layered {
			continue // its writes are in its layers
		}
		live = append(live, *o)
		tainted = tainted || o.Tainted
	}
	cur, same := st.scanned, st.scannedSame
	st.scanned, st.scannedSame = nil, false
	if cur == nil && !same {
		var err error
		if cur, same, err = s.scanAll(st); err != nil {
			return 0, nil, err
		}
	}
	var changed []string
	if !same {
		changed = changedPaths(st.Baseline, cur)
	}
	kept, held := 0, 0
	var problems []string
	for _, p := range changed {
		b, had := st.Baseline[p]
		a, has := cur[p]
		switch {
		case had && has && s.bookkeeping(st, p, b, a):
			st.Baseline[p] = a
		case !tainted && has:
			if err := s.keepFile(st, p, a.Hash); err != nil {
				problems = append(problems, err.Error())
				continue
			}
			stamped, err := s.stamp(st, p, a, record(live))
			if err != nil {
				problems = append(problems, err.Error())
			}
			st.Baseline[p], kept = stamped, kept+1
		case !tainted:
			delete(st.Baseline, p)
			kept++
		default:
			it, err := s.hold(st, p, b, had, has, a, live)
			if err != nil {
				// Left in place and out of the baseline: the next end
				// finds it again.
				problems = append(problems, err.Error())
				continue
			}
			st.Items = append(st.Items, it)
			held++
		}
	}
	outcome := "ok"
	if ses.Tainted {
		outcome = "tainted"
	}
	s.Audit.Record(audit.Entry{Event: "provenance.session", Subject: ses.Name, Outcome: outcome,
		Detail: map[string]any{"origin": ses.Origin.String(), "why": ses.Why, "read": ses.Read, "kept": kept, "held": held, "problems": problems}}, nil)
	return kept, problems, s.Root.Append(s.rel("sessions.jsonl"), mustLine(ses), 0o600)
}

func mustLine(v any) []byte {
	b, _ := json.Marshal(v)
	return append(b, '\n')
}

// changedPaths lists, sorted, the paths whose hash differs between a and b.
func changedPaths(a, b map[string]fileState) []string {
	var out []string
	inB := 0
	for p, x := range a {
		y, ok := b[p]
		if ok {
			inB++
		}
		if !ok || y.Hash != x.Hash {
			out = append(out, p)
		}
	}
	if inB < len(b) { // b has paths a has not
		for p := range b {
			if _, ok := a[p]; !ok {
				out = append(out, p)
			}
		}
	}
	sort.Strings(out)
	return out
}

// bookkeeping reports whether a memory file changed only in last_accessed,
// which every session's context load updates: not a change to review.
func (s *Store) bookkeeping(st *state, p string, b, a fileState) bool {
	if kind, _ := Watched(p); kind != "memory" {
		return false
	}
	old, err := s.getObject(st, b.Hash)
	if err != nil {
		return false
	}
	cur, err := s.Root.ReadFile(p, maxFile)
	if err != nil || !bytes.Equal(memory.WithoutAccess(old), memory.WithoutAccess(cur)) {
		return false
	}
	sum := sha256.Sum256(cur)
	return hex.EncodeToString(sum[:]) == a.Hash && st.pack.put(a.Hash, cur) == nil
}

// hold takes one change out of effect: the text now at p (if any) is
// copied into the store (held/ID, a file the host writes, with the hash of
// the bytes it copied), and the file at p is replaced by the baseline's
// content (or removed): no link to anything in a share is kept, so a hard
// link the session left to the file reaches only the inode that has left
// the shares, never the held copy (holdCopy).
func (s *Store) hold(st *state, p string, b fileState, had, has bool, a fileState, live []Session) (*Item, error) {
	kind, _ := Watched(p)
	st.Next++
	it := &Item{ID: fmt.Sprintf("r%d", st.Next), Path: p, Kind: kind, Sessions: live, Found: s.now(), Status: Waiting}
	switch {
	case !had:
		it.Change = "created"
	case !has:
		it.Change = "removed"
	default:
		it.Change = "changed"
	}
	if had {
		it.Before = b.Hash
	}
	if has {
		h, err := s.holdCopy(p, it.ID, a)
		if err != nil {
			return nil, errs.Wrap(errs.Failure, err, "hold %s for review", p)
		}
		it.After, it.Exec = h, fs.FileMode(a.Mode).Perm()&0o100 != 0
	}
	if had {
		if err := s.restore(st, p, b); err != nil {
			return nil, errs.Wrap(errs.Failure, err, "put back %s as it was before the session", p)
		}
	} else {
		if has && isText(it.After) {
			if err := s.Root.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, errs.Wrap(errs.Failure, err, "take %s out of the shares", p)
			}
		}
		s.removeEmptyParents(p)
	}
	s.Audit.Record(audit.Entry{Event: "provenance.hold", Subject: p, Outcome: "held",
		Detail: map[string]any{"id": it.ID, "change": it.Change, "session": live[0].Name, "hash": it.After}}, nil)
	return it, nil
}

// restore writes the content the baseline's entry b names at p, runnable
// by its owner when it was (layer.Perm).
func (s *Store) restore(st *state, p string, base fileState) error {
	b, err := s.getObject(st, base.Hash)
	if err != nil {
		return err
	}
	if err := s.Root.MkdirAll(filepath.Dir(filepath.Join(s.Root.Dir(), p)), 0o755); err != nil {
		return err
	}
	return s.Root.Write(p, b, layer.Perm(fs.FileMode(base.Mode).Perm()&0o100 != 0))
}

// removeEmptyParents removes the directories a held new file leaves empty
// below its share (a new skill's directory): each is removed only when
// empty (rmdir refuses one that is not), without listing it — a
// session may hold thousands of files from one directory.
func (s *Store) removeEmptyParents(p string) {
	for d := path.Dir(p); strings.Contains(d, "/"); d = path.Dir(d) {
		if s.Root.Remove(d) != nil {
			return
		}
	}
}
