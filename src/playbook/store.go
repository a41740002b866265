package playbook

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/frontmatter"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// Store is the playbooks directory of an instance.
type Store struct {
	Dir      string // playbooks/
	LockPath string // lock file serialising writers
	// Root is the safe-open layer every path is opened through (the
	// instance's FS): playbooks/ is the agent's to write, so a link or
	// special file there is refused, never followed. The zero Root means
	// the directory holding Dir.
	Root        safefile.Root
	ReviewEvery int              // default days between reviews (config playbooks.review_every_days)
	Template    []byte           // templates/playbook.md
	Now         func() time.Time // defaults to time.Now
	// In is the instance whose grants AllowHost keeps up to date (an
	// approved run: block stays approved with the host added); the zero
	// Instance: no grants.
	In instance.Instance
	// Audit records every change (playbook.new, .update, .stage,
	// .reviewed, .allow, .approve) and every show; nil: no audit entries.
	Audit *audit.Logger
	// Warn, when set, is told what a change could not do beside it (an
	// approved playbook not approved again), as an error with its advice;
	// nil: nothing is told.
	Warn func(err error)
}

// Open returns the playbooks of in: reviews every reviewEvery days by
// default, new ones from template, changes recorded in log.
func Open(in instance.Instance, reviewEvery int, template []byte, log *audit.Logger) *Store {
	return &Store{Dir: in.Playbooks(), LockPath: in.Lock("playbooks"), Root: in.FS(), ReviewEvery: reviewEvery,
		Template: template, In: in, Audit: log}
}

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Store) fs() safefile.Root {
	if s.Root.Dir() == "" {
		return safefile.Beneath(filepath.Dir(s.Dir))
	}
	return s.Root
}

func (s *Store) today() string { return s.now().UTC().Format(DateLayout) }

// Path returns the file of playbook name.
func (s *Store) Path(name string) string { return filepath.Join(s.Dir, name+".md") }

func checkName(name string) error {
	if !ValidName(name) {
		return errs.Usagef("invalid playbook name %q", name).
			Advise(BadName)
	}
	return nil
}

// Entry is one playbook in a listing.
type Entry struct {
	Name string `json:"name"`
	Path string `json:"path"`
	Meta
	NextReview string `json:"next_review"` // "" when never reviewed
	Due        bool   `json:"due"`
}

// List parses every playbook (*.md in Dir, sorted by name). Files that do
// not parse are returned as problems, not entries.
func (s *Store) List() ([]Entry, []Problem, error) {
	names, err := s.files()
	if err != nil {
		return nil, nil, err
	}
	var entries []Entry
	var problems []Problem
	for _, n := range names {
		d, err := s.load(filepath.Join(s.Dir, n))
		if err != nil {
			var pe *ParseError
			if errors.As(err, &pe) {
				problems = append(problems, pe.Problem)
				continue
			}
			return nil, nil, err
		}
		entries = append(entries, s.entry(strings.TrimSuffix(n, ".md"), d))
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
	return entries, problems, nil
}

// CheckStage refuses a stage name that is not on the ladder.
func CheckStage(stage string) error {
	if StageIndex(stage) < 0 {
		return errs.Usagef("unknown stage %q", stage).Advise(BadStage, "stages", strings.Join(Stages, ", "))
	}
	return nil
}

// Select returns the entries due for review (when due) and at stage (when
// not ""), in their order; never nil.
func Select(entries []Entry, due bool, stage string) []Entry {
	out := []Entry{}
	for _, e := range entries {
		if (!due || e.Due) && (stage == "" || e.Stage == stage) {
			out = append(out, e)
		}
	}
	return out
}

// files returns the names of the playbook files in Dir (*.md, not hidden,
// not directories), sorted; none when Dir does not exist.
func (s *Store) files() ([]string, error) {
	des, err := s.fs().ReadDir(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "read playbooks")
	}
	var names []string
	for _, de := range des {
		n := de.Name()
		if !de.IsDir() && strings.HasSuffix(n, ".md") && !strings.HasPrefix(n, ".") {
			names = append(names, n)
		}
	}
	return names, nil
}

func (s *Store) entry(name string, d *Doc) Entry {
	e := Entry{Name: name, Path: d.Path, Meta: d.Meta}
	if e.Title == "" {
		e.Title = name
	}
	if next, ok := d.Meta.NextReview(s.reviewEvery()); ok {
		e.NextReview = next.Format(DateLayout)
	}
	e.Due = d.Meta.Due(s.now(), s.reviewEvery())
	return e
}

func (s *Store) load(path string) (*Doc, error) {
	data, err := s.fs().ReadFile(path, instance.MaxPlaybookFile)
	var ue *safefile.UnsafeError
	var tl *safefile.TooLargeError
	switch {
	case errors.As(err, &ue) && ue.Path == path:
		// A link or special file planted in playbooks/: reported like a
		// file that does not parse (listed, never followed nor rewritten).
		return nil, &ParseError{Problem{Path: path, Reason: strings.TrimPrefix(ue.Error(), ue.Path+" ")}}
	case errors.As(err, &tl):
		// A file over the cap: the same, unread.
		return nil, &ParseError{Problem{Path: path, Reason: strings.TrimPrefix(tl.Error(), tl.Path+" ")}}
	}
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "read playbook")
	}
	return Parse(path, data)
}

// Get loads playbook name. A missing playbook is an error with advice; a
// file that does not parse is a usage error naming path:line.
func (s *Store) Get(name string) (*Doc, Entry, error) {
	if err := checkName(name); err != nil {
		return nil, Entry{}, err
	}
	p := s.Path(name)
	if _, err := s.fs().Lstat(p); errors.Is(err, fs.ErrNotExist) {
		return nil, Entry{}, errs.Failf("no playbook %q (%s)", name, p).Advise(NoPlaybook)
	}
	d, err := s.load(p)
	if err != nil {
		return nil, Entry{}, asUsage(err)
	}
	return d, s.entry(name, d), nil
}

// Shown is a playbook as hobbs playbook show --json prints it: its entry,
// its lint problems (never null) and its body.
type Shown struct {
	Entry
	Lint []Problem `json:"lint"`
	Body string    `json:"body"`
}

// Show is Get for a reader: the playbook and its Shown view, recorded as
// playbook.show.
func (s *Store) Show(name string) (*Doc, Shown, error) {
	d, e, err := s.runCopy(name)
	if d == nil && err == nil {
		d, e, err = s.Get(name)
	}
	s.Audit.Record(audit.Entry{Event: "playbook.show", Subject: name}, err)
	if err != nil {
		return nil, Shown{}, err
	}
	return d, Shown{Entry: e, Lint: append([]Problem{}, d.Lint...), Body: d.Body()}, nil
}

// The approved copy a headless run carries out: the launcher hands the run
// the playbook's text as it was checked against its approval, in a
// read-only session file, and names it in the run's environment; show
// prints that copy for that playbook, so a session that changes the file
// while the run starts changes nothing the run reads.
const (
	EnvRunPlaybook     = "HOBBS_RUN_PLAYBOOK"      // the playbook the run carries out
	EnvRunPlaybookFile = "HOBBS_RUN_PLAYBOOK_FILE" // its approved text
	// EnvRunAssets names the directory of the approved copies of the
	// skills (skills/NAME/) and sub-agents (agents/NAME.md) the playbook
	// names: the shell start-up (hobbs-init.sh) links these, and no
	// instance skill or sub-agent from the shares.
	EnvRunAssets = "HOBBS_RUN_ASSETS"
)

// runCopy returns the approved copy of name when this process runs in a
// headless run of name, nil otherwise.
func (s *Store) runCopy(name string) (*Doc, Entry, error) {
	file := os.Getenv(EnvRunPlaybookFile)
	if file == "" || os.Getenv(EnvRunPlaybook) != name {
		return nil, Entry{}, nil
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, Entry{}, errs.Wrap(errs.Failure, err, "the run's approved copy of %s", name)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, instance.MaxPlaybookFile+1))
	if err == nil && len(data) > instance.MaxPlaybookFile {
		err = errors.New("too large")
	}
	if err != nil {
		return nil, Entry{}, errs.Wrap(errs.Failure, err, "the run's approved copy of %s", name)
	}
	d, err := Parse(s.Path(name), data)
	if err != nil {
		return nil, Entry{}, asUsage(err)
	}
	return d, s.entry(name, d), nil
}

// asUsage turns a *ParseError into an exit-2 error (an invalid input file)
// that says the file was left alone.
func asUsage(err error) error {
	var pe *ParseError
	if errors.As(err, &pe) {
		return errs.Usagef("%s", pe.Error()).Advise(Unparsable)
	}
	return err
}

// NewOptions say how to create a playbook.
type NewOptions struct {
	Title string // "" : from the source's frontmatter or first "# " heading, else from the name
	// Source, when non-nil, is the playbook content composed elsewhere: a
	// body (Markdown with the required sections) or a whole file with
	// frontmatter. nil: start from the template.
	Source []byte
}

// New creates playbook name and returns its path. It refuses to overwrite.
// The audit event playbook.new says whether it came from the template or a
// source.
func (s *Store) New(name string, opt NewOptions) (string, error) {
	p, err := s.create(name, opt)
	from := "template"
	if opt.Source != nil {
		from = "source"
	}
	s.Audit.Record(audit.Entry{Event: "playbook.new", Subject: name, Detail: map[string]any{"from": from}}, err)
	return p, err
}

func (s *Store) create(name string, opt NewOptions) (string, error) {
	if err := checkName(name); err != nil {
		return "", err
	}
	if strings.ContainsAny(opt.Title, "\r\n") {
		return "", errs.Usagef("the title must be one line")
	}
	var content []byte
	var err error
	if opt.Source == nil {
		content, err = s.fromTemplate(name, opt.Title)
	} else {
		content, err = s.fromSource(name, opt.Title, opt.Source, nil)
	}
	if err != nil {
		return "", err
	}
	p := s.Path(name)
	d, err := Parse(p, content)
	if err != nil {
		return "", asUsage(err) // defensive: what we compose must parse
	}
	if len(d.Lint) > 0 {
		var msgs []string
		for _, pr := range d.Lint {
			msgs = append(msgs, pr.Reason)
		}
		return "", errs.Usagef("the new playbook would not pass lint: %s", strings.Join(msgs, "; ")).
			Advise(NewFailsLint, "sections", strings.Join(Sections, ", "))
	}
	if err := s.fs().MkdirAll(s.Dir, 0o755); err != nil {
		return "", errs.Wrap(errs.Failure, err, "create playbooks directory")
	}
	if err := s.fs().Create(p, content, 0o644); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return "", errs.Failf("playbook %q already exists (%s)", name, p).
				Advise(Exists, "name", name)
		}
		return "", errs.Wrap(errs.Failure, err, "write playbook")
	}
	return p, nil
}

// TitleFromName turns "weekly-invoices" into "Weekly invoices".
func TitleFromName(name string) string {
	t := strings.ReplaceAll(name, "-", " ")
	if t == "" {
		return t
	}
	return strings.ToUpper(t[:1]) + t[1:]
}

func (s *Store) fromTemplate(name, title string) ([]byte, error) {
	if len(s.Template) == 0 {
		return nil, errs.Failf("no playbook template")
	}
	if title == "" {
		title = TitleFromName(name)
	}
	t := string(s.Template)
	t = strings.ReplaceAll(t, `"{{TITLE}}"`, quote(title))
	t = strings.ReplaceAll(t, "{{TITLE}}", title)
	t = strings.ReplaceAll(t, "{{DATE}}", s.today())
	t = strings.ReplaceAll(t, "{{REVIEW_EVERY}}", strconv.Itoa(s.reviewEvery()))
	return []byte(t), nil
}

// DefaultReviewEvery is the review interval in days when the Store has none.
const DefaultReviewEvery = 30

func (s *Store) reviewEvery() int {
	if s.ReviewEvery > 0 {
		return s.ReviewEvery
	}
	return DefaultReviewEvery
}

// fromSource completes composed content with frontmatter. Keys the source's
// own frontmatter sets are kept (except title when --title is given); dates
// default to today, stage to manual, review_every to the instance default.
// With base (an update of an existing playbook), created, last_reviewed and
// stage come from base — the stage changes only through SetStage — and
// title, tags and review_every from base unless the source sets them.
func (s *Store) fromSource(name, title string, src []byte, base *Meta) ([]byte, error) {
	src = []byte(strings.ReplaceAll(string(src), "\r\n", "\n"))
	body := string(src)
	var meta Meta
	has := map[string]bool{}
	if frontmatter.Starts(src) {
		d, err := Parse("<source>", src)
		if err != nil {
			return nil, asUsage(err)
		}
		meta = d.Meta
		for k := range d.keyLines {
			has[k] = true
		}
		if !has["stage"] {
			meta.Stage = ""
		}
		for _, p := range d.Lint {
			if strings.HasPrefix(p.Reason, "unknown key") || strings.HasPrefix(p.Reason, "run: unknown key") {
				return nil, errs.Usagef("the playbook source: %s", p.Reason)
			}
		}
		body = d.Body()
	}
	if base != nil {
		if has["stage"] && meta.Stage != base.Stage {
			return nil, errs.Usagef("the source sets stage %s but %s is %s", meta.Stage, name, base.Stage).
				Advise(StageInSource, "name", name, "stage", meta.Stage)
		}
		meta.Stage, meta.Created, meta.LastReviewed = base.Stage, base.Created, base.LastReviewed
		meta.Updated = ""
		if !has["title"] {
			meta.Title = base.Title
		}
		if !has["tags"] {
			meta.Tags = base.Tags
		}
		if !has["review_every"] {
			meta.ReviewEvery = base.ReviewEvery
		}
		if !has["run"] {
			meta.Run = base.Run
		}
	}
	body = strings.TrimLeft(body, "\n")
	if strings.TrimSpace(body) == "" {
		return nil, errs.Usagef("the playbook source is empty")
	}
	if title != "" {
		meta.Title = title
	}
	h1 := firstH1(body)
	if meta.Title == "" {
		meta.Title = h1
	}
	if meta.Title == "" {
		meta.Title = TitleFromName(name)
	}
	if h1 == "" {
		body = "# " + meta.Title + "\n\n" + body
	}
	if missing := MissingSections(body); len(missing) > 0 {
		return nil, errs.Usagef("the playbook source lacks sections: %s", strings.Join(missing, ", ")).
			Advise(LacksSections, "sections", strings.Join(Sections, ", "))
	}
	today := s.today()
	if base != nil {
		meta.Updated = today
	}
	def := func(v, d string) string {
		if v == "" {
			return d
		}
		return v
	}
	if meta.ReviewEvery == 0 {
		meta.ReviewEvery = s.reviewEvery()
	}
	var b strings.Builder
	b.WriteString("---\n")
	fmt.Fprintf(&b, "title: %s\n", quote(meta.Title))
	fmt.Fprintf(&b, "stage: %s\n", def(meta.Stage, Stages[0]))
	b.WriteString("tags: " + tagsYAML(meta.Tags) + "\n")
	fmt.Fprintf(&b, "created: %s\n", quote(def(meta.Created, today)))
	fmt.Fprintf(&b, "updated: %s\n", quote(def(meta.Updated, today)))
	fmt.Fprintf(&b, "last_reviewed: %s\n", quote(def(meta.LastReviewed, today)))
	fmt.Fprintf(&b, "review_every: %d\n", meta.ReviewEvery)
	if meta.Run != nil {
		b.WriteString("run:\n" + meta.Run.yamlBlock("\n"))
	}
	b.WriteString("---\n\n")
	b.WriteString(body)
	if !strings.HasSuffix(body, "\n") {
		b.WriteString("\n")
	}
	return []byte(b.String()), nil
}

func tagsYAML(tags []string) string {
	q := make([]string, len(tags))
	for i, t := range tags {
		q[i] = quote(t)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func firstH1(body string) string {
	for _, h := range strings.Split(body, "\n") {
		if strings.HasPrefix(h, "# ") {
			return strings.TrimSpace(h[2:])
		}
	}
	return ""
}

// lock takes the playbooks lock, which every writer holds.
func (s *Store) lock() (func(), error) {
	if err := s.fs().MkdirAll(filepath.Dir(s.LockPath), 0o755); err != nil {
		return nil, errs.Wrap(errs.Failure, err, "create lock directory")
	}
	unlock, err := s.fs().Lock(s.LockPath, 30*time.Second)
	if err != nil {
		if errors.Is(err, safefile.ErrLockTimeout) {
			return nil, errs.Wrap(errs.Timeout, err, "playbooks are busy")
		}
		return nil, errs.Wrap(errs.Failure, err, "lock playbooks")
	}
	return unlock, nil
}

// update loads name under the lock, lets change compute the new content and
// writes it atomically. change returns nil content for "no change".
func (s *Store) update(name string, change func(d *Doc) ([]byte, error)) error {
	if err := checkName(name); err != nil {
		return err
	}
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	d, _, err := s.Get(name)
	if err != nil {
		return err
	}
	// A change on the host to a playbook whose text was approved as it was
	// read is approved too: exactly the bytes written, under the lock.
	approved := s.In.Root != "" && !instance.InContainer() && CheckGrant(s.In, name, d) == nil
	content, err := change(d)
	if err != nil || content == nil {
		return err
	}
	nd, err := Parse(d.Path, content)
	if err != nil {
		return errs.Wrap(errs.Failure, err, "internal error: the updated playbook would not parse; nothing written")
	}
	fi, err := s.fs().Stat(d.Path)
	perm := fs.FileMode(0o644)
	if err == nil {
		perm = fi.Mode().Perm()
	}
	if err := s.fs().Write(d.Path, content, perm); err != nil {
		return errs.Wrap(errs.Failure, err, "write playbook")
	}
	if approved {
		if _, err := Approve(s.In, name, nd, s.now(), s.Audit); err != nil && s.Warn != nil {
			s.Warn(&errs.Error{Code: errs.Failure, Msg: name + " changed but its approval was not renewed", Err: err,
				Advice: errs.NewAdvice(ApproveAgain, "name", name)})
		}
	}
	return nil
}

// UpdateOptions say how to replace a playbook's content.
type UpdateOptions struct {
	Title  string // "" : keep (or the source's frontmatter title)
	Source []byte // the new content: a body with every section, or a whole file
	Note   string // one line for Notes ("" : "updated")
}

// Update replaces the content of playbook name with opt.Source, keeping its
// stage, created and last_reviewed, setting updated to today and appending
// "- DATE updated[: NOTE]" under Notes. It reports changed=false and writes
// nothing when the new content equals the old. A change (or a refusal) is
// the audit event playbook.update with the note.
func (s *Store) Update(name string, opt UpdateOptions) (bool, error) {
	changed, err := s.replace(name, opt)
	if changed || err != nil {
		s.Audit.Record(audit.Entry{Event: "playbook.update", Subject: name, Detail: map[string]any{"note": opt.Note}}, err)
	}
	return changed, err
}

func (s *Store) replace(name string, opt UpdateOptions) (changed bool, err error) {
	if strings.ContainsAny(opt.Title+opt.Note, "\r\n") {
		return false, errs.Usagef("the title and the note must be one line")
	}
	err = s.update(name, func(d *Doc) ([]byte, error) {
		c, err := s.fromSource(name, opt.Title, opt.Source, &d.Meta)
		if err != nil {
			return nil, err
		}
		// Compare without the updated date: same text means no change.
		nd, err := Parse(d.Path, c)
		if err != nil {
			return nil, asUsage(err)
		}
		if nd.Body() == d.Body() && sameMeta(nd.Meta, d.Meta) {
			return nil, nil
		}
		text := s.today() + " updated"
		if n := strings.TrimSpace(opt.Note); n != "" {
			text += ": " + n
		}
		changed = true
		return appendNote(c, nd.fmEnd, text), nil
	})
	return changed, err
}

func sameMeta(a, b Meta) bool {
	a.Updated, b.Updated = "", ""
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// StageChange is the result of SetStage.
type StageChange struct {
	Name   string `json:"name"`
	From   string `json:"from"`
	To     string `json:"to"`
	Reason string `json:"reason"`
	Date   string `json:"date"`
}

// SetStage moves playbook name to stage to: up one rung at a time, down any
// number. It records "- DATE stage FROM → TO: REASON" under Notes and sets
// updated. Setting the current stage again changes nothing (From == To).
// A move (or a refusal) is the audit event playbook.stage.
func (s *Store) SetStage(name, to, reason string) (StageChange, error) {
	ch, err := s.setStage(name, to, reason)
	if ch.From != ch.To || err != nil {
		s.Audit.Record(audit.Entry{Event: "playbook.stage", Subject: name,
			Detail: map[string]any{"from": ch.From, "to": ch.To, "reason": ch.Reason}}, err)
	}
	return ch, err
}

func (s *Store) setStage(name, to, reason string) (StageChange, error) {
	reason = strings.TrimSpace(reason)
	ch := StageChange{Name: name, To: to, Reason: reason, Date: s.today()}
	if StageIndex(to) < 0 {
		return ch, errs.Usagef("unknown stage %q", to).Advise(StageLadder, "stages", strings.Join(Stages, " → "))
	}
	if reason == "" {
		return ch, errs.Usagef("a stage change needs a reason").Advise(NoReason)
	}
	if strings.ContainsAny(reason, "\r\n") {
		return ch, errs.Usagef("the reason must be one line")
	}
	err := s.update(name, func(d *Doc) ([]byte, error) {
		ch.From = d.Meta.Stage
		from, target := StageIndex(ch.From), StageIndex(to)
		if from == target {
			return nil, nil
		}
		if target > from+1 {
			return nil, errs.Usagef("%s cannot jump from %s to %s", name, ch.From, to).
				Advise(StageJump, "next", Stages[from+1])
		}
		c, err := d.setKeys([][2]string{{"stage", to}, {"updated", quote(ch.Date)}})
		if err != nil {
			return nil, errs.Usagef("%v", err)
		}
		return appendNote(c, d.fmEnd, fmt.Sprintf("%s stage %s → %s: %s", ch.Date, ch.From, to, reason)), nil
	})
	return ch, err
}

// Review is the result of Reviewed.
type Review struct {
	Name       string `json:"name"`
	Date       string `json:"date"`
	Note       string `json:"note,omitempty"`
	NextReview string `json:"next_review"`
}

// Reviewed records a review of playbook name today: last_reviewed and
// updated become today and "- DATE reviewed[: NOTE]" is appended under Notes,
// and the audit event playbook.reviewed records it.
func (s *Store) Reviewed(name, note string) (Review, error) {
	r, err := s.reviewed(name, note)
	s.Audit.Record(audit.Entry{Event: "playbook.reviewed", Subject: name, Detail: map[string]any{"note": r.Note}}, err)
	return r, err
}

func (s *Store) reviewed(name, note string) (Review, error) {
	note = strings.TrimSpace(note)
	r := Review{Name: name, Date: s.today(), Note: note}
	if strings.ContainsAny(note, "\r\n") {
		return r, errs.Usagef("the note must be one line")
	}
	err := s.update(name, func(d *Doc) ([]byte, error) {
		c, err := d.setKeys([][2]string{{"last_reviewed", quote(r.Date)}, {"updated", quote(r.Date)}})
		if err != nil {
			return nil, errs.Usagef("%v", err)
		}
		text := r.Date + " reviewed"
		if note != "" {
			text += ": " + note
		}
		m := d.Meta
		m.LastReviewed = r.Date
		next, _ := m.NextReview(s.ReviewEvery)
		r.NextReview = next.Format(DateLayout)
		return appendNote(c, d.fmEnd, text), nil
	})
	return r, err
}

// Lint checks every playbook file and returns all problems, fatal and not,
// sorted by path and line. File names that are not valid playbook names are
// problems too.
func (s *Store) Lint() ([]Problem, int, error) {
	names, err := s.files()
	if err != nil {
		return nil, 0, err
	}
	var out []Problem
	n := 0
	for _, name := range names {
		n++
		p := filepath.Join(s.Dir, name)
		if !ValidName(strings.TrimSuffix(name, ".md")) {
			out = append(out, Problem{Path: p, Reason: "file name is not a kebab-case playbook name"})
		}
		d, err := s.load(p)
		if err != nil {
			var pe *ParseError
			if errors.As(err, &pe) {
				out = append(out, pe.Problem)
				continue
			}
			return nil, n, err
		}
		out = append(out, d.Lint...)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Line < out[j].Line
	})
	return out, n, nil
}

// HostAllowed is the result of AllowHost.
type HostAllowed struct {
	Name    string `json:"name"`
	Host    string `json:"host"` // canonical pattern
	Changed bool   `json:"changed"`
	Date    string `json:"date"`
}

// AllowHost adds host (a policy domains entry) to the run.hosts of playbook
// name, creating the run: block when there is none, sets updated and
// appends "- DATE run: allowed host HOST[: REASON]" under Notes. A host
// already listed changes nothing. The run: block is rewritten whole (in
// hobbs's layout: a comment inside it is lost); the rest of the file stays
// byte for byte. A playbook the user had approved (a grant of s.In) stays
// approved as written, with the host added (update); one a session changed
// stays unapproved. A change (or a refusal) is the audit event
// playbook.allow.
func (s *Store) AllowHost(name, host, reason string) (HostAllowed, error) {
	res, err := s.allowHost(name, host, reason)
	if res.Changed || err != nil {
		s.Audit.Record(audit.Entry{Event: "playbook.allow", Subject: name, Detail: map[string]any{"host": host, "reason": reason}}, err)
	}
	return res, err
}

// allowHost adds the host.
func (s *Store) allowHost(name, host, reason string) (HostAllowed, error) {
	reason = strings.TrimSpace(reason)
	res := HostAllowed{Name: name, Date: s.today()}
	if strings.ContainsAny(reason, "\r\n") {
		return res, errs.Usagef("the reason must be one line")
	}
	pat, err := CheckHost(host)
	if err != nil {
		return res, errs.Usagef("%v", err).Advise(BadHost)
	}
	res.Host = pat
	err = s.update(name, func(d *Doc) ([]byte, error) {
		run := &Run{Hosts: []string{}, Secrets: []string{}, Tools: []string{}}
		if d.Meta.Run != nil {
			cp := *d.Meta.Run
			run = &cp
		}
		for _, h := range run.Hosts {
			if h == pat {
				return nil, nil
			}
		}
		run.Hosts = append(append([]string{}, run.Hosts...), pat)
		c, err := d.setRun(run)
		if err != nil {
			return nil, errs.Usagef("%v", err)
		}
		d2, err := Parse(d.Path, c)
		if err != nil {
			return nil, errs.Usagef("%s:2: cannot update the run: block safely (%v); edit it by hand", d.Path, err)
		}
		c, err = d2.setKeys([][2]string{{"updated", quote(res.Date)}})
		if err != nil {
			return nil, errs.Usagef("%v", err)
		}
		text := res.Date + " run: allowed host " + pat
		if reason != "" {
			text += ": " + reason
		}
		res.Changed = true
		return appendNote(c, d2.fmEnd, text), nil
	})
	return res, err
}
