package memory

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// Store is the memory of one instance.
type Store struct {
	In          instance.Instance
	Audit       *audit.Logger    // nil: no audit entries
	Now         func() time.Time // nil: time.Now
	LockTimeout time.Duration    // 0: one minute

	problems      map[string]Problem
	sharedChecked bool
}

// Open returns the store of in, logging changes to log.
func Open(in instance.Instance, log *audit.Logger) *Store { return &Store{In: in, Audit: log} }

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC().Truncate(time.Second)
	}
	return time.Now().UTC().Truncate(time.Second)
}

func (s *Store) tierDir(t Tier) string {
	if t == Archive {
		return s.In.MemoryArchive()
	}
	return s.In.MemoryActive()
}

func (s *Store) report(p Problem) {
	if s.problems == nil {
		s.problems = map[string]Problem{}
	}
	if _, ok := s.problems[p.Path]; !ok {
		s.problems[p.Path] = p
	}
}

// Problems returns every malformed file met so far, by path.
func (s *Store) Problems() []Problem {
	out := make([]Problem, 0, len(s.problems))
	for _, p := range s.problems {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// lock takes the instance's memory lock (memory/.lock) before a change.
// It refuses to start the change when memory/history.jsonl, where the change
// will be logged, is a link or special file: nothing is changed that could
// not be logged, and the append would refuse it anyway.
func (s *Store) lock() (func(), error) {
	root := s.fs()
	if err := root.MkdirAll(s.In.MemoryDir(), 0o755); err != nil {
		return nil, errs.Wrap(errs.Failure, err, "memory lock")
	}
	timeout := s.LockTimeout
	if timeout == 0 {
		timeout = time.Minute
	}
	unlock, err := root.Lock(s.In.Lock("memory"), timeout)
	if errors.Is(err, safefile.ErrLockTimeout) {
		return nil, &errs.Error{Code: errs.Timeout, Msg: "memory is locked by another process", Err: err,
			Advice: errs.NewAdvice(Locked)}
	}
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "memory lock")
	}
	for _, p := range []string{s.In.MemoryHistory(), s.In.MemoryHistory() + ".lock"} {
		fi, err := root.Lstat(p)
		if err == nil && !fi.Mode().IsRegular() {
			err = unsafeEntry(p, fi.Mode())
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			unlock()
			return nil, errs.Wrap(errs.Failure, err, "memory history")
		}
	}
	return unlock, nil
}

// readFile parses one memory file, reporting it when malformed.
func (s *Store) readFile(path string, tier Tier) (*Memory, error) {
	data, err := readMemFile(s.fs(), path)
	if err != nil {
		return nil, err
	}
	m, err := Parse(data, tier)
	if err != nil {
		var pe *ParseError
		p := Problem{Path: path, Reason: err.Error()}
		if errors.As(err, &pe) {
			p.Line, p.Reason = pe.Line, pe.Reason
		}
		s.report(p)
		return nil, &errs.Error{Code: errs.Failure, Msg: p.String(),
			Advice: errs.NewAdvice(Unparsable)}
	}
	m.Path, m.raw = path, data
	return m, nil
}

// loadTier parses every file of a tier directly (no index), reporting
// malformed ones. Duplicate ids keep the first file by name.
func (s *Store) loadTier(t Tier) ([]*Memory, error) {
	s.checkShared()
	root, dir := s.fs(), s.tierDir(t)
	names, err := s.listNames(dir)
	if err != nil {
		return nil, err
	}
	mems := make([]*Memory, len(names))
	probs := make([]*Problem, len(names))
	parallel(len(names), func(i int) {
		p := filepath.Join(dir, names[i])
		data, err := readMemFile(root, p)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				pr := problemOf(p, err)
				probs[i] = &pr
			}
			return
		}
		m, err := Parse(data, t)
		if err != nil {
			pr := Problem{Path: p, Reason: err.Error()}
			var pe *ParseError
			if errors.As(err, &pe) {
				pr.Line, pr.Reason = pe.Line, pe.Reason
			}
			probs[i] = &pr
			return
		}
		m.Path = p
		mems[i] = m
	})
	var out []*Memory
	for i := range names {
		if probs[i] != nil {
			s.report(*probs[i])
		}
		if mems[i] != nil {
			out = append(out, mems[i])
		}
	}
	return out, nil
}

// listNames returns the memory files of dir, sorted, reporting the links
// and special files named like one. A link in place of dir itself is an
// error.
func (s *Store) listNames(dir string) ([]string, error) {
	all, err := s.fs().ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "memory")
	}
	var names []string
	for _, e := range all {
		if !memoryFile(e.Name()) || e.IsDir() {
			continue
		}
		if !e.Type().IsRegular() {
			p := filepath.Join(dir, e.Name())
			s.report(problemOf(p, unsafeEntry(p, e.Type())))
			continue
		}
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names, nil
}

// dedupe drops memories whose id an earlier one already has, reporting them.
func (s *Store) dedupe(mems []*Memory) []*Memory {
	first := map[string]string{}
	out := mems[:0]
	for _, m := range mems {
		if p, ok := first[m.ID]; ok {
			s.report(Problem{Path: m.Path, Line: 0, Reason: fmt.Sprintf("duplicate id %s (also in %s)", m.ID, p)})
			continue
		}
		first[m.ID] = m.Path
		out = append(out, m)
	}
	return out
}

// find locates the memory with id in either tier.
func (s *Store) find(id string) (*Memory, error) {
	m, err := s.lookup(id)
	if err == nil && m == nil {
		err = errs.Failf("no memory %s", id).Advise(NoMemory)
	}
	return m, err
}

// lookup is find that returns nil and no error when no memory has id.
func (s *Store) lookup(id string) (*Memory, error) {
	if !ValidID(id) {
		return nil, errs.Usagef("invalid memory id %q", id).Advise(BadID)
	}
	for _, t := range []Tier{Active, Archive} {
		p := filepath.Join(s.tierDir(t), id+".md")
		m, err := s.readFile(p, t)
		if err == nil && m.ID == id {
			return m, nil
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	// A hand-written file may be named otherwise: ask the index.
	for _, t := range []Tier{Active, Archive} {
		ix, err := s.openIndexAll(t)
		if err != nil {
			return nil, err
		}
		for i := 0; i < ix.n(); i++ {
			if !ix.live(i) {
				continue
			}
			if r := ix.rec(i); r.ID == id && r.ErrReason == "" {
				p := filepath.Join(ix.dir, r.Name)
				ix.close()
				m, err := s.readFile(p, t)
				if err != nil {
					return nil, err
				}
				if m.ID == id {
					return m, nil
				}
				break
			}
		}
		ix.close()
	}
	return nil, nil
}

// openIndex opens the index of tier t, checked as the rules say (every file
// with full), for the use u.
func (s *Store) openIndex(t Tier, full bool, u use) (*tierIndex, error) {
	s.checkShared()
	ix, err := openTier(s.fs(), s.tierDir(t), s.In.MemoryIndex(), t, time.Now(), full, u)
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "memory index")
	}
	for _, p := range ix.problems {
		s.report(p)
	}
	return ix, nil
}

// openIndexAll opens the index of tier t for a use of every record: they
// are read at once, and an index used without a check that holds a damaged
// record is opened again with a full check (which drops and re-reads it).
func (s *Store) openIndexAll(t Tier) (*tierIndex, error) {
	ix, err := s.openIndex(t, false, useRecords)
	if err != nil {
		return nil, err
	}
	if ix.trusted && !ix.intactAll() {
		ix.close()
		return s.openIndex(t, true, useRecords)
	}
	ix.loadRecs()
	return ix, nil
}

// write replaces m's file atomically.
func (s *Store) write(m *Memory) error {
	data, err := m.Marshal()
	if err != nil {
		return err
	}
	return s.fs().Write(m.Path, data, 0o644)
}

// move puts m's file, rewritten, into tier t (created there exclusively:
// never overwrites), then removes it from where it was.
func (s *Store) move(m *Memory, t Tier) error {
	root := s.fs()
	if err := root.MkdirAll(s.tierDir(t), 0o755); err != nil {
		return err
	}
	dst := filepath.Join(s.tierDir(t), filepath.Base(m.Path))
	if dst == m.Path {
		m.Tier = t
		return s.write(m)
	}
	data, err := m.Marshal()
	if err != nil {
		return err
	}
	if err := root.Create(dst, data, 0o644); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return errs.Failf("cannot move %s: %s already exists", m.ID, dst).
				Advise(NameClash)
		}
		return err
	}
	if err := root.Remove(m.Path); err != nil {
		return err
	}
	m.Path, m.Tier = dst, t
	return nil
}

// ---- history ----

// Snapshot summarises a memory in a history line.
type Snapshot struct {
	Status     string   `json:"status"`
	Tier       Tier     `json:"tier"`
	Reinforced int      `json:"reinforced"`
	Tags       []string `json:"tags,omitempty"`
	Text       string   `json:"text"`
}

// HistoryEntry is one line of memory/history.jsonl.
type HistoryEntry struct {
	Time   time.Time `json:"time"`
	Op     string    `json:"op"`
	ID     string    `json:"id,omitempty"`
	IDs    []string  `json:"ids,omitempty"`
	Path   string    `json:"path,omitempty"`
	Before *Snapshot `json:"before,omitempty"`
	After  *Snapshot `json:"after,omitempty"`
	Source string    `json:"source,omitempty"`
	Actor  string    `json:"actor"`
	// Purged marks a line of a forgotten memory whose text was taken out
	// (forget --purge), and the forget line of such a purge.
	Purged bool `json:"purged,omitempty"`
}

func snap(m *Memory) *Snapshot {
	if m == nil {
		return nil
	}
	return &Snapshot{Status: m.Status, Tier: m.Tier, Reinforced: m.Reinforced, Tags: m.Tags, Text: m.Summary(80)}
}

// record appends the history line and the audit entry of one change.
func (s *Store) record(op string, before, after *Memory, source string) error {
	m := after
	if m == nil {
		m = before
	}
	h := HistoryEntry{Time: s.now(), Op: op, ID: m.ID, Path: s.In.Rel(m.Path), Before: snap(before),
		After: snap(after), Source: source, Actor: audit.Actor()}
	if err := s.appendHistory(h); err != nil {
		return err
	}
	detail := map[string]any{"path": h.Path}
	if source != "" {
		detail["source"] = source
	}
	return s.Audit.Log(audit.Entry{Event: "memory." + op, Subject: m.ID, Outcome: "ok", Detail: detail})
}

func (s *Store) appendHistory(h HistoryEntry) error {
	line, err := audit.MarshalLine(h)
	if err != nil {
		return err
	}
	root := s.fs()
	if err := root.MkdirAll(s.In.MemoryDir(), 0o755); err != nil {
		return err
	}
	return root.Append(s.In.MemoryHistory(), line, 0o644)
}

// ---- add, reinforce, supersede ----

// AddOptions are the optional parts of a new memory.
type AddOptions struct {
	Tags   []string
	Type   string
	Source string
	// Supersedes is the id of the memory this one replaces. Tags, Type and
	// Source left empty are then taken from that memory.
	Supersedes string
}

// AddResult says what Add did.
type AddResult struct {
	ID         string      `json:"id"`
	Path       string      `json:"path"`
	Action     string      `json:"action"` // "created" or "reinforced"
	Reinforced int         `json:"reinforced"`
	Superseded string      `json:"superseded,omitempty"`
	Candidates []Candidate `json:"candidates"`
	// Advice says what to do about the candidates (HasCandidates: the same
	// procedure the identity and /remember give); zero without candidates.
	// Hint is its words, which the command layer fills in for --json.
	Advice   errs.Advice `json:"-"`
	Hint     string      `json:"hint,omitempty"`
	Problems []Problem   `json:"problems,omitempty"`
}

// Add stores text as a memory, or reinforces the active memory with the same
// normalised text. Close matches come back as candidates.
func (s *Store) Add(text string, opt AddOptions) (*AddResult, error) {
	text = strings.TrimSpace(text)
	norm := Normalize(text)
	if norm == "" {
		return nil, errs.Usagef("empty memory text").Advise(EmptyText)
	}
	if opt.Type != "" && !ValidID(opt.Type) {
		return nil, errs.Usagef("invalid type %q", opt.Type).Advise(BadType)
	}
	for _, t := range opt.Tags {
		if !validTag(t) {
			return nil, errs.Usagef("invalid tag %q", t).Advise(BadTag)
		}
	}
	if err := refuseSecret("memory text", text); err != nil {
		return nil, err
	}
	if err := refuseSecret("--source", opt.Source); err != nil {
		return nil, err
	}
	for _, t := range opt.Tags {
		if err := refuseSecret("--tag", t); err != nil {
			return nil, err
		}
	}
	unlock, err := s.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()

	var old *Memory
	if opt.Supersedes != "" {
		if old, err = s.find(opt.Supersedes); err != nil {
			return nil, err
		}
		if old.Status == StatusSuperseded {
			return nil, errs.Failf("%s is already superseded by %s", old.ID, old.SupersededBy).
				Advise(SupersedeNewest, "newer", old.SupersededBy)
		}
		// A correction keeps what it corrects: tags (which decide the
		// sub-agents that see it), type and source carry over unless given.
		// The old file may have been edited by hand: only values a flag
		// could give carry over.
		if len(opt.Tags) == 0 {
			for _, t := range old.Tags {
				if validTag(t) {
					opt.Tags = append(opt.Tags, t)
				}
			}
		}
		if opt.Type == "" && ValidID(old.Type) {
			opt.Type = old.Type
		}
		if opt.Source == "" {
			opt.Source = old.Source
		}
	}
	// Compare with the active memories: the index (checked file by file)
	// knows their ids and status; only bodies are read, in parallel.
	ix, err := s.openIndex(Active, false, useRecords)
	if err != nil {
		return nil, err
	}
	good := s.goodRecords(ix, map[string]string{})
	type other struct {
		id, path, norm, summary string
	}
	others := make([]*other, len(good))
	ids := make([]string, len(good))
	for k, i := range good {
		ids[k] = ix.rec(i).ID
	}
	root := s.fs()
	parallel(len(good), func(k int) {
		r := ix.rec(good[k])
		if r.Status != StatusActive || (old != nil && r.ID == old.ID) {
			return
		}
		p := filepath.Join(ix.dir, r.Name)
		data, err := readMemFile(root, p)
		if err != nil {
			return // reported by the index check, or changed since
		}
		_, body, _, err := split(data)
		if err != nil {
			return
		}
		others[k] = &other{id: r.ID, path: p, norm: Normalize(string(body)), summary: summary(string(body), 80)}
	})
	ix.close()
	res := &AddResult{Candidates: []Candidate{}}
	wordsNew := words(norm)
	for _, o := range others {
		if o == nil {
			continue
		}
		if o.norm == norm && old == nil {
			m, err := s.readFile(o.path, Active)
			if err != nil || m.ID != o.id || m.Status != StatusActive {
				continue // changed under us; reported if it no longer parses
			}
			if err := s.reinforceLocked(m, opt.Source, opt.Tags); err != nil {
				return nil, err
			}
			res.ID, res.Path, res.Action, res.Reinforced = m.ID, m.Path, "reinforced", m.Reinforced
			res.Problems = s.Problems()
			return res, nil
		}
		if sim := jaccard(wordsNew, words(o.norm)); sim >= CandidateThreshold {
			res.Candidates = append(res.Candidates, Candidate{ID: o.id, Similarity: float64(int(sim*100+0.5)) / 100, Summary: o.summary})
		}
	}
	rankCandidates(res.Candidates)
	if len(res.Candidates) > 5 {
		res.Candidates = res.Candidates[:5]
	}
	now := s.now()
	m := &Memory{Type: opt.Type, Tags: uniqueStrings(opt.Tags), Created: now, Reinforced: 0, Source: opt.Source,
		Status: StatusActive, Body: text + "\n", Tier: Active}
	if m.Tags == nil {
		m.Tags = []string{}
	}
	if old != nil {
		m.Supersedes = []string{old.ID}
	}
	if err := s.create(m, ids); err != nil {
		return nil, err
	}
	if err := s.record("add", nil, m, opt.Source); err != nil {
		return nil, err
	}
	res.ID, res.Path, res.Action = m.ID, m.Path, "created"
	if old != nil {
		before := old.clone()
		old.Status, old.SupersededBy, old.Updated = StatusSuperseded, m.ID, now
		if err := s.move(old, Archive); err != nil {
			return nil, err
		}
		if err := s.record("supersede", before, old, opt.Source); err != nil {
			return nil, err
		}
		res.Superseded = old.ID
	}
	if len(res.Candidates) > 0 {
		// The new memory is already stored, so a duplicate is archived
		// rather than left beside the memory it repeats or contradicts.
		res.Advice = errs.NewAdvice(HasCandidates, "id", m.ID)
	}
	res.Problems = s.Problems()
	return res, nil
}

func validTag(t string) bool {
	return t != "" && !strings.ContainsAny(t, " \t\n,[]{}#:") && len(t) <= 64
}

func uniqueStrings(in []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, v := range in {
		if !seen[strings.ToLower(v)] {
			seen[strings.ToLower(v)] = true
			out = append(out, v)
		}
	}
	return out
}

// create gives m the next free id of the day and creates its file.
func (s *Store) create(m *Memory, activeIDs []string) error {
	prefix := "mem_" + m.Created.Format("20060102") + "_"
	next := 1
	for _, id := range activeIDs {
		if n, ok := idNumber(id, prefix); ok && n >= next {
			next = n + 1
		}
	}
	root := s.fs()
	if err := root.MkdirAll(s.In.MemoryActive(), 0o755); err != nil {
		return err
	}
	// A forgotten memory's id is never given again: the history and other
	// memories' links still name it.
	gone := s.forgottenIDs()
	for tries := 0; tries < 100000 && next+tries <= instance.MaxSeq; tries++ {
		id := fmt.Sprintf("%s%03d", prefix, next+tries)
		if gone[id] {
			continue
		}
		if _, err := root.Lstat(filepath.Join(s.In.MemoryArchive(), id+".md")); err == nil {
			continue
		}
		m.ID = id
		m.Path = filepath.Join(s.In.MemoryActive(), id+".md")
		data, err := m.Marshal()
		if err != nil {
			return err
		}
		err = root.Create(m.Path, data, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return err
	}
	return errs.Failf("no free memory id for %s", prefix)
}

// idNumber is the sequence number of id, a memory id of the day prefix
// names. An id whose number is out of range (instance.ParseSeq: the agent
// names files in memory/) is not one of the day's: it never wraps the
// next.
func idNumber(id, prefix string) (int, bool) {
	if !strings.HasPrefix(id, prefix) {
		return 0, false
	}
	n, err := instance.ParseSeq(id[len(prefix):])
	return n, err == nil
}

func (s *Store) reinforceLocked(m *Memory, source string, tags []string) error {
	before := m.clone()
	m.Reinforced++
	m.Updated = s.now()
	if source != "" {
		if m.Source == "" {
			m.Source = source
		}
		found := false
		for _, v := range m.Sources {
			found = found || v == source
		}
		if !found {
			m.Sources = append(m.Sources, source)
		}
	}
	for _, t := range tags {
		if !m.HasTag(t) {
			m.Tags = append(m.Tags, t)
		}
	}
	if err := s.write(m); err != nil {
		return err
	}
	return s.record("reinforce", before, m, source)
}

// Reinforce counts one more confirmation of the memory id.
func (s *Store) Reinforce(id, source string) (*Memory, error) {
	if err := refuseSecret("--source", source); err != nil {
		return nil, err
	}
	unlock, err := s.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	m, err := s.find(id)
	if err != nil {
		return nil, err
	}
	if m.Status == StatusSuperseded {
		return nil, errs.Failf("%s is superseded by %s", m.ID, m.SupersededBy).
			Advise(ReinforceNewer, "newer", m.SupersededBy)
	}
	return m, s.reinforceLocked(m, source, nil)
}

// Supersede replaces the memory id with a new one holding text.
func (s *Store) Supersede(id, text string, opt AddOptions) (*AddResult, error) {
	opt.Supersedes = id
	return s.Add(text, opt)
}

// ---- tiers ----

// Archive moves an active memory to the archive. Archiving an archived
// memory changes nothing (changed=false).
func (s *Store) Archive(id string) (m *Memory, changed bool, err error) {
	return s.setTier(id, Archive, "archive")
}

// Promote moves an archived memory back to the active tier.
func (s *Store) Promote(id string) (m *Memory, changed bool, err error) {
	return s.setTier(id, Active, "promote")
}

func (s *Store) setTier(id string, t Tier, op string) (*Memory, bool, error) {
	unlock, err := s.lock()
	if err != nil {
		return nil, false, err
	}
	defer unlock()
	m, err := s.find(id)
	if err != nil {
		return nil, false, err
	}
	if m.Status == StatusSuperseded {
		return nil, false, errs.Failf("%s was superseded by %s", m.ID, m.SupersededBy).
			Advise(UseNewer, "newer", m.SupersededBy)
	}
	status := StatusActive
	if t == Archive {
		status = StatusArchived
	}
	if m.Tier == t && m.Status == status {
		return m, false, nil
	}
	before := m.clone()
	m.Status, m.Updated = status, s.now()
	if err := s.move(m, t); err != nil {
		return nil, false, err
	}
	return m, true, s.record(op, before, m, "")
}

// Show returns the memory id with its text.
func (s *Store) Show(id string) (*Memory, error) { return s.find(id) }

// Rememberer stores each lesson it is given as hobbs memory add does (type
// lesson; the same text reinforces the memory that has it), tells told of
// each result, and returns the memory's id: what task.Done takes to turn a
// retrospective's lessons into memories.
func (s *Store) Rememberer(told func(res *AddResult, text string)) func(text string, tags []string, source string) (string, error) {
	return func(text string, tags []string, source string) (string, error) {
		res, err := s.Add(text, AddOptions{Tags: tags, Type: "lesson", Source: source})
		if err != nil {
			return "", err
		}
		told(res, text)
		return res.ID, nil
	}
}
