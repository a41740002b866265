package memory

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// HookLimit is the number of characters Claude Code keeps of a hook's
// additional context; DefaultBudget stays under it with room for the JSON.
const (
	HookLimit     = 10000
	DefaultBudget = 9500
)

// Section is a block of text placed in context in full (foundation.md,
// claude.md, an agent's operational.md).
type Section struct {
	Title string `json:"title"`
	Path  string `json:"path,omitempty"`
	Text  string `json:"text"`
}

// ContextOptions shape a context.
type ContextOptions struct {
	// Tags keeps only memories carrying at least one of them (none: all).
	Tags []string
	// Budget is the most characters (runes) of the whole text; 0 means
	// DefaultBudget. foundation.md is never cut, even past the budget.
	Budget int
	// Sections come after foundation.md and before the memories, After after
	// the memories; both in full while they fit (cut with a marker
	// otherwise), and both before any memory in the budget.
	Sections []Section
	After    []Section
	// HookEvent is the Claude Code hook BuildHook answers: SessionStart
	// (the default) or SubagentStart. Claude Code checks that the JSON names
	// the event that ran the hook.
	HookEvent string
}

// Context is what BuildContext produced.
type Context struct {
	Text     string    `json:"text"`
	Length   int       `json:"length"` // characters of Text
	Budget   int       `json:"budget"`
	Sections []Section `json:"sections"` // foundation, Sections, After, as included
	Memories []Entry   `json:"memories"` // included, best first
	Omitted  int       `json:"omitted"`  // matching active memories left out for the budget
	Cut      []string  `json:"cut,omitempty"`
}

// FileSection reads path as a section; a missing file gives ok=false. It
// refuses a link or special file at path but trusts the directories above
// it: for a file of the instance use Store.FileSection, which trusts none.
func FileSection(title, path string) (Section, bool, error) {
	return fileSection(safefile.Beneath(filepath.Dir(path)), title, path)
}

// FileSection reads path, a file of the instance, as a section through the
// safe-open layer; a missing file gives ok=false, a link or special file
// (anywhere below the instance) is refused.
func (s *Store) FileSection(title, path string) (Section, bool, error) {
	return fileSection(s.fs(), title, path)
}

func fileSection(root safefile.Root, title, path string) (Section, bool, error) {
	b, err := readMemFile(root, path)
	if errors.Is(err, fs.ErrNotExist) {
		return Section{}, false, nil
	}
	if err != nil {
		return Section{}, false, errs.Wrap(errs.Failure, err, "read %s", path)
	}
	return Section{Title: title, Path: path, Text: strings.TrimSpace(string(b))}, true, nil
}

// SessionSections returns the fixed sections of a context after
// foundation.md: claude.md for the main session (agent ""), the agent's
// operational.md for a sub-agent.
func (s *Store) SessionSections(agent string) ([]Section, error) {
	if agent == "" {
		sec, ok, err := s.FileSection("claude.md", s.In.ClaudeMD())
		if err != nil || !ok {
			return nil, err
		}
		return []Section{sec}, nil
	}
	if !ValidID(agent) || strings.ContainsAny(agent, ".:") {
		return nil, errs.Usagef("invalid agent name %q", agent)
	}
	sec, ok, err := s.FileSection("agents/"+agent+"/operational.md", s.In.Operational(agent))
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errs.Failf("no agent %s: %s does not exist", agent, s.In.Operational(agent)).
			WithHint("agents live in agents/<name>/; see hobbs agent list")
	}
	return []Section{sec}, nil
}

func runes(s string) int { return utf8.RuneCountInString(s) }

func cutRunes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	i := 0
	for k := range s {
		if i == n {
			return s[:k]
		}
		i++
	}
	return s
}

func renderSection(sec Section) string { return "## " + sec.Title + "\n\n" + sec.Text + "\n\n" }

func renderMemory(m *Memory) string {
	var b strings.Builder
	b.WriteString("- ")
	b.WriteString(m.ID)
	if len(m.Tags) > 0 {
		b.WriteString(" [" + strings.Join(m.Tags, ", ") + "]")
	}
	b.WriteString(": ")
	body := strings.TrimSpace(m.Body)
	b.WriteString(strings.ReplaceAll(body, "\n", "\n  "))
	b.WriteByte('\n')
	return b.String()
}

// BuildContext assembles foundation.md in full, then opt.Sections, then the
// best-scoring active memories filtered by opt.Tags, as many as fit
// opt.Budget, then opt.After. It does not update last_accessed: call Touch with the
// result's memories once the context has been delivered.
func (s *Store) BuildContext(opt ContextOptions) (*Context, error) {
	budget := opt.Budget
	if budget <= 0 {
		budget = DefaultBudget
	}
	c := &Context{Budget: budget, Sections: []Section{}, Memories: []Entry{}}
	var b strings.Builder
	if f, ok, err := s.FileSection("foundation.md", s.In.Foundation()); err != nil {
		return nil, err
	} else if ok {
		b.WriteString(renderSection(f))
		c.Sections = append(c.Sections, f)
	}
	used := runes(b.String())
	fit := func(secs []Section) string {
		var out strings.Builder
		for _, sec := range secs {
			text := renderSection(sec)
			left := budget - used
			if runes(text) > left {
				const marker = "\n… (cut to fit the context budget)\n\n"
				keep := left - runes(marker)
				if keep < runes("## "+sec.Title+"\n\n")+20 {
					c.Cut = append(c.Cut, sec.Title)
					continue
				}
				text = cutRunes(text, keep) + marker
				sec.Text = cutRunes(sec.Text, keep)
				c.Cut = append(c.Cut, sec.Title)
			}
			out.WriteString(text)
			used += runes(text)
			c.Sections = append(c.Sections, sec)
		}
		return out.String()
	}
	b.WriteString(fit(opt.Sections))
	after := fit(opt.After) // reserved now, written after the memories
	if after != "" {
		used++ // the blank line before it
	}

	now := s.now()
	ix, ranked, err := s.ranked(opt.Tags, now)
	if err != nil {
		return nil, err
	}
	defer ix.close()
	const header = "## Memories\n\n"
	footer := func(n int) string {
		return fmt.Sprintf("\n(%d more active memories not shown: hobbs memory list, hobbs memory search)\n", n)
	}
	left := budget - used - runes(header) - runes(footer(len(ranked)))
	var items strings.Builder
	misses := 0
	for _, ref := range ranked {
		if left < 16 || misses > 64 {
			break
		}
		r := ix.rec(ref.ord)
		if r.Rendered > left {
			misses++ // too long, as the index says: not read
			continue
		}
		e := r.entry(ix.dir, Active, now)
		m, err := s.readFile(e.Path, Active)
		if err != nil {
			if unsafe(err) { // replaced since the index was checked
				s.report(problemOf(e.Path, err))
			}
			continue // reported; the rest keep working
		}
		item := renderMemory(m)
		if n := runes(item); n <= left {
			items.WriteString(item)
			left -= n
			c.Memories = append(c.Memories, e)
			misses = 0
		} else {
			misses++
		}
	}
	c.Omitted = len(ranked) - len(c.Memories)
	if len(c.Memories) > 0 {
		b.WriteString(header)
		b.WriteString(items.String())
		if c.Omitted > 0 {
			b.WriteString(footer(c.Omitted))
		}
	} else if c.Omitted > 0 && used+runes(footer(c.Omitted)) <= budget {
		b.WriteString(footer(c.Omitted))
	}
	if after != "" {
		if len(c.Memories) > 0 || c.Omitted > 0 {
			b.WriteString("\n")
		}
		b.WriteString(after)
	}
	c.Text = strings.TrimRight(b.String(), "\n") + "\n"
	c.Length = runes(c.Text)
	return c, nil
}

// rankedRef is an active memory in the ranking: its score, id and ordinal in
// the index.
type rankedRef struct {
	score float64
	id    string
	ord   int
}

// ranked returns the valid active memories with status active carrying one
// of tags (any when empty), best score first. The caller closes ix.
func (s *Store) ranked(tags []string, now time.Time) (*tierIndex, []rankedRef, error) {
	ix, err := s.openIndex(Active, false, useRecords)
	if err != nil {
		return nil, nil, err
	}
	good := s.goodRecords(ix, map[string]string{})
	out := make([]rankedRef, 0, len(good))
	for _, i := range good {
		r := ix.rec(i)
		if r.Status != StatusActive || len(tags) > 0 && !anyTag(r.Tags, tags) {
			continue
		}
		sc := Score(r.Reinforced, fromUnix(r.Created), fromUnix(r.Updated), fromUnix(r.LastAccessed), now)
		out = append(out, rankedRef{sc, r.ID, i})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].score != out[j].score {
			return out[i].score > out[j].score
		}
		return out[i].id > out[j].id
	})
	return ix, out, nil
}

// Touch sets last_accessed of the given memories to now, batched: one lock,
// at most one rewrite per memory per day (a memory already accessed today is
// left alone), one history line and one audit entry for the batch.
func (s *Store) Touch(entries []Entry) error {
	now := s.now()
	today := now.Format("2006-01-02")
	var todo []Entry
	for _, e := range entries {
		if e.LastAccessed.IsZero() || e.LastAccessed.Format("2006-01-02") != today {
			todo = append(todo, e)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	var ids []string
	for _, e := range todo {
		m, err := s.readFile(e.Path, e.Tier)
		if err != nil || m.ID != e.ID {
			continue // moved or changed since: nothing to touch
		}
		if !m.LastAccessed.IsZero() && m.LastAccessed.Format("2006-01-02") == today {
			continue
		}
		m.LastAccessed = now
		if err := s.write(m); err != nil {
			return err
		}
		ids = append(ids, m.ID)
	}
	if len(ids) == 0 {
		return nil
	}
	if err := s.appendHistory(HistoryEntry{Time: now, Op: "access", IDs: ids, Actor: audit.Actor()}); err != nil {
		return err
	}
	return s.Audit.Log(audit.Entry{Event: "memory.access", Subject: fmt.Sprintf("%d memories", len(ids)), Outcome: "ok"})
}

// HookOutput is the JSON a Claude Code SessionStart or SubagentStart hook
// prints: its additionalContext is added to the (sub-agent's) context.
type HookOutput struct {
	HookSpecificOutput struct {
		HookEventName     string `json:"hookEventName"`
		AdditionalContext string `json:"additionalContext"`
	} `json:"hookSpecificOutput"`
}

// Hook events BuildHook answers.
const (
	SessionStart  = "SessionStart"
	SubagentStart = "SubagentStart"
)

// HookJSON wraps text for a hook of event (SessionStart when empty).
func HookJSON(event, text string) ([]byte, error) {
	if event == "" {
		event = SessionStart
	}
	var h HookOutput
	h.HookSpecificOutput.HookEventName = event
	h.HookSpecificOutput.AdditionalContext = text
	return json.Marshal(h)
}

// BuildHook builds the context for opt.HookEvent's hook and returns it with
// the hook JSON. The JSON itself (escapes included) is kept within HookLimit
// characters: when escaping pushes it over, the memories are cut further.
// foundation.md is never cut, so a foundation longer than the limit still
// goes over it.
func (s *Store) BuildHook(opt ContextOptions) (*Context, []byte, error) {
	if opt.Budget <= 0 {
		opt.Budget = DefaultBudget
	}
	for tries := 0; ; tries++ {
		c, err := s.BuildContext(opt)
		if err != nil {
			return nil, nil, err
		}
		b, err := HookJSON(opt.HookEvent, c.Text)
		if err != nil {
			return nil, nil, err
		}
		over := utf8.RuneCount(b) - HookLimit
		if over <= 0 || tries == 4 || opt.Budget <= over {
			return c, b, nil
		}
		opt.Budget -= over + 16
	}
}
