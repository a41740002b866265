package memory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// HookLimit is the most characters of a hook's additionalContext that Claude
// Code hands to the model as they are: longer text is saved to a file and the
// model gets the file's path and a short preview instead. DefaultBudget stays
// under it.
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

	// foundationByPath puts a note naming foundation.md's path in place of
	// its text (BuildHook, when a hook cannot carry the text).
	foundationByPath bool
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
	// Foundation is how foundation.md fits (nil without one).
	Foundation *FoundationFit `json:"foundation,omitempty"`
	// Warnings say, one line each, what the foundation's length costs.
	Warnings []string `json:"warnings,omitempty"`
}

// FoundationFit is how foundation.md fits a context.
type FoundationFit struct {
	Path  string `json:"path"`
	Chars int    `json:"chars"` // characters of its text
	// Needed is the characters the first line and the foundation's section
	// take together; Budget what the whole context may take.
	Needed int `json:"needed"`
	Budget int `json:"budget"`
	// OverBudget: nothing but the foundation fits the budget (claude.md,
	// memories and learnings are left out).
	OverBudget bool `json:"over_budget"`
	// OverHook: a hook cannot carry the foundation's text (HookLimit), so
	// a hook's context names the file instead (ByPath).
	OverHook bool `json:"over_hook"`
	ByPath   bool `json:"by_path"`
}

// Warning is one line saying what the foundation's length costs, or "" when
// it fits.
func (f *FoundationFit) Warning() string {
	if f == nil {
		return ""
	}
	switch {
	case f.OverHook:
		return fmt.Sprintf("foundation.md is %d characters, more than the %d characters Claude Code passes on from "+
			"a hook: the session-start hook names the file instead of including it, and the model must read it "+
			"itself; shorten foundation.md by at least %d characters", f.Chars, HookLimit, f.Needed-HookLimit)
	case f.OverBudget:
		return fmt.Sprintf("foundation.md is %d characters, which leaves nothing of the context budget of %d: "+
			"claude.md, memories and learnings are left out; shorten foundation.md", f.Chars, f.Budget)
	}
	return ""
}

// FoundationFit measures foundation.md against budget (DefaultBudget when 0)
// and the hook limit, as a session's context would place it. It returns nil
// when there is no foundation.md.
func (s *Store) FoundationFit(budget int) (*FoundationFit, error) {
	if budget <= 0 {
		budget = DefaultBudget
	}
	f, ok, err := s.FileSection("foundation.md", s.In.Foundation())
	if err != nil || !ok {
		return nil, err
	}
	return fitOf(f, introLine([]string{"foundation.md", "claude.md", memoriesTitle(nil)}), budget), nil
}

func fitOf(f Section, intro string, budget int) *FoundationFit {
	head := intro + renderSection(f)
	return &FoundationFit{Path: f.Path, Chars: runes(f.Text), Needed: hookLen(head), Budget: budget,
		OverBudget: runes(head) >= budget, OverHook: hookLen(head) > HookLimit}
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
	return Section{Title: title, Path: path, Text: contextText(string(b))}, true, nil
}

// contextText is a Markdown file's text as a context carries it: without
// HTML comments (the templates' guidance for the user, which would otherwise
// reach every session) and the blank lines they leave.
func contextText(s string) string {
	s = instance.StripComments(s)
	lines := strings.Split(s, "\n")
	out := lines[:0]
	blank := false
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			if blank {
				continue
			}
			blank = true
			out = append(out, "")
			continue
		}
		blank = false
		out = append(out, strings.TrimRight(l, " \t"))
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

// SessionContext is what hobbs memory context builds: the memories with
// any of tags (none: all) within budget, after claude.md for the main
// session (agent ""), or before the agent's operational.md (after the
// memories, as in hobbs agent context: their room is reserved first).
func (s *Store) SessionContext(agent string, tags []string, budget int) (ContextOptions, error) {
	opt := ContextOptions{Tags: tags, Budget: budget}
	secs, err := s.SessionSections(agent)
	if agent == "" {
		opt.Sections = secs
	} else {
		opt.After = secs
	}
	return opt, err
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
			Advise(NoAgent)
	}
	return []Section{sec}, nil
}

func runes(s string) int { return utf8.RuneCountInString(s) }

// hookLen is the length of s as Claude Code measures a hook's text. Claude
// Code runs on JavaScript, whose strings count UTF-16 code units: a
// character outside the Basic Multilingual Plane counts two. That is never
// fewer than the characters, so text within HookLimit by this count fits
// however the limit is counted.
func hookLen(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r > 0xFFFF {
			n++
		}
	}
	return n
}

// introLine is the first line of every context: one factual sentence saying
// what the text is, what it holds and where it comes from. Text a hook adds
// that starts with instructions from nowhere can be taken for a prompt
// injection; a line naming its source cannot.
func introLine(parts []string) string {
	return "Hobbs context, read from the user's Hobbs instance by the hobbs toolkit: " +
		strings.Join(parts, ", ") + ".\n\n"
}

// memoriesTitle names the memories part of the first line: all active
// memories, or those with one of tags (tags that cannot be real, such as the
// one hobbs agent context uses to match nothing, are not named).
func memoriesTitle(tags []string) string {
	var named []string
	for _, t := range tags {
		if validTag(t) {
			named = append(named, t)
		}
	}
	if len(named) == 0 {
		return "active memories (best first)"
	}
	return "active memories tagged " + strings.Join(named, " or ") + " (best first)"
}

// foundationNote replaces foundation.md's text when a hook cannot carry it.
func foundationNote(f Section) string {
	return fmt.Sprintf("Not included here: foundation.md is %d characters, more than the %d characters Claude Code "+
		"passes on from a hook. Its full text is in the file %s.", runes(f.Text), HookLimit, f.Path)
}

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
	// The first line names what the context holds. Room is kept for every
	// part planned; the line written names only the parts included, which
	// is never longer.
	planned := []string{"foundation.md"}
	for _, sec := range opt.Sections {
		planned = append(planned, sec.Title)
	}
	planned = append(planned, memoriesTitle(opt.Tags))
	for _, sec := range opt.After {
		planned = append(planned, sec.Title)
	}
	var b strings.Builder
	used := runes(introLine(planned))
	var included []string
	if f, ok, err := s.FileSection("foundation.md", s.In.Foundation()); err != nil {
		return nil, err
	} else if ok {
		c.Foundation = fitOf(f, introLine(planned), budget)
		if opt.foundationByPath {
			f.Text = foundationNote(f)
			c.Foundation.ByPath = true
		}
		b.WriteString(renderSection(f))
		c.Sections = append(c.Sections, f)
		included = append(included, "foundation.md")
	}
	used += runes(b.String())
	var titles []string // of the sections fit includes, in order
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
			titles = append(titles, sec.Title)
		}
		return out.String()
	}
	b.WriteString(fit(opt.Sections))
	included = append(included, titles...)
	titles = nil
	after := fit(opt.After) // reserved now, written after the memories
	afterTitles := titles
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
	if len(c.Memories) > 0 {
		included = append(included, memoriesTitle(opt.Tags))
	}
	included = append(included, afterTitles...)
	if len(included) == 0 {
		included = []string{"nothing yet (no foundation.md, no memories)"}
	}
	c.Text = introLine(included) + strings.TrimRight(b.String(), "\n") + "\n"
	c.Length = runes(c.Text)
	if w := c.Foundation.Warning(); w != "" {
		c.Warnings = append(c.Warnings, w)
	}
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

// HookJSON wraps text for a hook of event (SessionStart when empty). The
// text is not HTML-escaped: Claude Code reads JSON, and "<" written as
// "\u003c" would only make the line longer.
func HookJSON(event, text string) ([]byte, error) {
	if event == "" {
		event = SessionStart
	}
	var h HookOutput
	h.HookSpecificOutput.HookEventName = event
	h.HookSpecificOutput.AdditionalContext = text
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(h); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// BuildHook builds the context for opt.HookEvent's hook and returns it with
// the hook JSON. The additionalContext string — not the JSON line, whose
// escapes Claude Code does not count — is kept within HookLimit as Claude
// Code counts it (hookLen), so Claude Code never swaps it for a file and a
// preview: the budget is capped at HookLimit and lowered while the text is
// longer. foundation.md is never cut: when it alone is longer than a hook
// can carry, its section names the file instead of holding its text
// (Foundation.ByPath), and claude.md and the memories fill the budget as
// usual.
func (s *Store) BuildHook(opt ContextOptions) (*Context, []byte, error) {
	if opt.Budget <= 0 {
		opt.Budget = DefaultBudget
	}
	if opt.Budget > HookLimit {
		opt.Budget = HookLimit
	}
	for tries := 0; ; tries++ {
		c, err := s.BuildContext(opt)
		if err != nil {
			return nil, nil, err
		}
		over := hookLen(c.Text) - HookLimit
		if over > 0 && !opt.foundationByPath && c.Foundation != nil && c.Foundation.OverHook {
			opt.foundationByPath = true
			continue
		}
		if over <= 0 || tries == 8 || opt.Budget <= over {
			b, err := HookJSON(opt.HookEvent, c.Text)
			if err != nil {
				return nil, nil, err
			}
			return c, b, nil
		}
		opt.Budget -= over
	}
}
