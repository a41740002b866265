package memory

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"time"

	"github.com/hobbs-agent/hobbs/src/errs"
)

// Entry is a memory as the index knows it: its frontmatter and the first
// line of its text.
type Entry struct {
	ID           string    `json:"id"`
	Status       string    `json:"status"`
	Tier         Tier      `json:"tier"`
	Type         string    `json:"type,omitempty"`
	Tags         []string  `json:"tags"`
	Created      time.Time `json:"created"`
	Updated      time.Time `json:"updated,omitempty"`
	LastAccessed time.Time `json:"last_accessed,omitempty"`
	Reinforced   int       `json:"reinforced"`
	SupersededBy string    `json:"superseded_by,omitempty"`
	Summary      string    `json:"summary"`
	Path         string    `json:"path"`
	Score        float64   `json:"score"`
}

// MarshalJSON writes unset times as null.
func (e Entry) MarshalJSON() ([]byte, error) {
	type plain Entry
	return json.Marshal(struct {
		plain
		Updated      *time.Time `json:"updated"`
		LastAccessed *time.Time `json:"last_accessed"`
	}{plain(e), optTime(e.Updated), optTime(e.LastAccessed)})
}

func (r *record) entry(dir string, tier Tier, now time.Time) Entry {
	tags := r.Tags
	if tags == nil {
		tags = []string{}
	}
	e := Entry{ID: r.ID, Status: r.Status, Tier: tier, Type: r.Type, Tags: tags,
		Created: fromUnix(r.Created), Updated: fromUnix(r.Updated), LastAccessed: fromUnix(r.LastAccessed),
		Reinforced: r.Reinforced, SupersededBy: r.SupersededBy, Summary: r.Summary, Path: filepath.Join(dir, r.Name)}
	e.Score = math.Round(Score(e.Reinforced, e.Created, e.Updated, e.LastAccessed, now)*1000) / 1000
	return e
}

// Score ranks a memory for context and tidy (see the package doc).
func Score(reinforced int, created, updated, lastAccessed, now time.Time) float64 {
	changed := created
	if updated.After(changed) {
		changed = updated
	}
	idle := now.Sub(changed).Hours() / 24
	if idle < 0 {
		idle = 0
	}
	s := (1 + math.Log2(1+float64(reinforced))) * math.Pow(0.5, idle/90)
	if !lastAccessed.IsZero() {
		since := now.Sub(lastAccessed).Hours() / 24
		if since < 0 {
			since = 0
		}
		s += math.Pow(0.5, since/30)
	}
	return s
}

// Scope selects tiers.
type Scope int

const (
	ScopeActive Scope = iota
	ScopeArchive
	ScopeAll
)

func (sc Scope) tiers() []Tier {
	switch sc {
	case ScopeArchive:
		return []Tier{Archive}
	case ScopeAll:
		return []Tier{Active, Archive}
	}
	return []Tier{Active}
}

// ListOptions filter List.
type ListOptions struct {
	Scope  Scope
	Tags   []string // any of them
	Status string   // "" = any
}

// entries returns the valid entries of the scope (index-backed), reporting
// malformed files and duplicate ids.
func (s *Store) entries(sc Scope, now time.Time) ([]Entry, error) {
	var out []Entry
	seen := map[string]string{}
	for _, t := range sc.tiers() {
		ix, err := s.openIndexAll(t)
		if err != nil {
			return nil, err
		}
		for _, i := range s.goodRecords(ix, seen) {
			out = append(out, ix.rec(i).entry(ix.dir, t, now))
		}
		ix.close()
	}
	return out, nil
}

// goodRecords returns the live ordinals of ix whose file parses and whose id
// no other file has, reporting the others. Of files sharing an id, the one
// seen in an earlier tier wins, then the smaller name. seen carries ids to
// paths across tiers.
func (s *Store) goodRecords(ix *tierIndex, seen map[string]string) []int {
	first := map[string]int{} // id -> ordinal, this tier
	var dups []int
	ix.loadRecs()
	for i := 0; i < ix.n(); i++ {
		if !ix.live(i) {
			continue
		}
		r := ix.rec(i)
		if r.ErrReason != "" {
			s.report(Problem{Path: ix.problemPath(r), Line: r.ErrLine, Reason: r.ErrReason})
			continue
		}
		if _, dup := seen[r.ID]; dup {
			dups = append(dups, i)
			continue
		}
		if j, dup := first[r.ID]; dup {
			if r.Name < ix.rec(j).Name {
				first[r.ID] = i
				dups = append(dups, j)
			} else {
				dups = append(dups, i)
			}
			continue
		}
		first[r.ID] = i
	}
	good := make([]int, 0, len(first))
	for _, i := range first {
		good = append(good, i)
	}
	sort.Ints(good)
	for id, i := range first {
		seen[id] = filepath.Join(ix.dir, ix.rec(i).Name)
	}
	for _, i := range dups {
		r := ix.rec(i)
		s.report(Problem{Path: filepath.Join(ix.dir, r.Name), Reason: fmt.Sprintf("duplicate id %s (also in %s)", r.ID, seen[r.ID])})
	}
	return good
}

// List returns the memories matching opt, newest id first.
func (s *Store) List(opt ListOptions) ([]Entry, error) {
	if opt.Status != "" && opt.Status != StatusActive && opt.Status != StatusArchived && opt.Status != StatusSuperseded {
		return nil, errs.Usagef("unknown status %q", opt.Status).Advise(BadStatus)
	}
	all, err := s.entries(opt.Scope, s.now())
	if err != nil {
		return nil, err
	}
	out := []Entry{}
	for _, e := range all {
		if opt.Status != "" && e.Status != opt.Status {
			continue
		}
		if len(opt.Tags) > 0 && !anyTag(e.Tags, opt.Tags) {
			continue
		}
		out = append(out, e)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ID > out[j].ID })
	return out, nil
}

func anyTag(have, want []string) bool {
	for _, w := range want {
		if hasTag(have, w) {
			return true
		}
	}
	return false
}

// Stats counts memories.
type Stats struct {
	Tiers    map[Tier]int   `json:"tiers"`
	Status   map[string]int `json:"status"`
	Tags     map[string]int `json:"tags"`
	Total    int            `json:"total"`
	Problems int            `json:"problems"`
}

// Stats counts memories per tier, status and tag.
func (s *Store) Stats() (*Stats, error) {
	all, err := s.entries(ScopeAll, s.now())
	if err != nil {
		return nil, err
	}
	st := &Stats{Tiers: map[Tier]int{Active: 0, Archive: 0}, Status: map[string]int{StatusActive: 0, StatusArchived: 0,
		StatusSuperseded: 0}, Tags: map[string]int{}}
	for _, e := range all {
		st.Total++
		st.Tiers[e.Tier]++
		st.Status[e.Status]++
		for _, t := range e.Tags {
			st.Tags[t]++
		}
	}
	st.Problems = len(s.problems)
	return st, nil
}

// TidyResult is one memory tidy moved (or would move).
type TidyResult struct {
	ID       string  `json:"id"`
	IdleDays int     `json:"idle_days"`
	Limit    int     `json:"limit_days"`
	Score    float64 `json:"score"`
	Summary  string  `json:"summary"`
}

// Tidy archives active memories idle for more than afterDays × (1 +
// reinforced) days. With dryRun it only reports them.
func (s *Store) Tidy(afterDays int, dryRun bool) ([]TidyResult, error) {
	if afterDays <= 0 {
		return nil, errs.Usagef("tidy_after_days must be positive, got %d", afterDays)
	}
	unlock, err := s.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	now := s.now()
	active, err := s.loadTier(Active)
	if err != nil {
		return nil, err
	}
	active = s.dedupe(active)
	out := []TidyResult{}
	for _, m := range active {
		if m.Status != StatusActive {
			continue // lint reports the contradiction; tidy leaves it alone
		}
		last := m.Created
		for _, t := range []time.Time{m.Updated, m.LastAccessed} {
			if t.After(last) {
				last = t
			}
		}
		idle := int(now.Sub(last).Hours() / 24)
		limit := afterDays * (1 + m.Reinforced)
		if idle < limit {
			continue
		}
		r := TidyResult{ID: m.ID, IdleDays: idle, Limit: limit, Summary: m.Summary(80),
			Score: math.Round(Score(m.Reinforced, m.Created, m.Updated, m.LastAccessed, now)*1000) / 1000}
		if !dryRun {
			before := m.clone()
			m.Status, m.Updated = StatusArchived, now
			if err := s.move(m, Archive); err != nil {
				return out, err
			}
			if err := s.record("tidy", before, m, ""); err != nil {
				return out, err
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// Lint parses every file of both tiers (ignoring the index) and returns every
// problem: unparseable files, duplicate ids, a status that contradicts the
// tier, links to missing memories.
func (s *Store) Lint() ([]Problem, int, error) {
	var all []*Memory
	for _, t := range []Tier{Active, Archive} {
		mems, err := s.loadTier(t)
		if err != nil {
			return nil, 0, err
		}
		all = append(all, mems...)
	}
	all = s.dedupe(all)
	// A link to a forgotten memory is not broken: forget leaves links as
	// they are.
	ids := s.forgottenIDs()
	for _, m := range all {
		ids[m.ID] = true
	}
	for _, m := range all {
		switch {
		case m.Tier == Active && m.Status != StatusActive:
			s.report(Problem{Path: m.Path, Reason: fmt.Sprintf("status %s but the file is in active/", m.Status)})
		case m.Tier == Archive && m.Status == StatusActive:
			s.report(Problem{Path: m.Path, Reason: "status active but the file is in archive/"})
		case m.SupersededBy != "" && !ids[m.SupersededBy]:
			s.report(Problem{Path: m.Path, Reason: fmt.Sprintf("superseded_by %s: no such memory", m.SupersededBy)})
		}
	}
	return s.Problems(), len(all), nil
}
