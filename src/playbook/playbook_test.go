package playbook

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

const good = `---
title: "Weekly invoices"
stage: manual
tags: [finance]
created: "2026-01-05"
updated: "2026-01-05"
last_reviewed: "2026-01-05"
review_every: 14
---

# Weekly invoices

## Trigger

Every Monday.

## Inputs

## Steps

1. Open the mailbox.

## Outputs

## Judgment Calls

## Sensitive Data

## Automation Potential

## Notes

Some prose the user wrote.

## Appendix

kept as is
`

func TestParseGood(t *testing.T) {
	d, err := Parse("p.md", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if d.Meta.Title != "Weekly invoices" || d.Meta.Stage != "manual" || d.Meta.ReviewEvery != 14 ||
		len(d.Meta.Tags) != 1 || d.Meta.Tags[0] != "finance" || d.Meta.LastReviewed != "2026-01-05" {
		t.Fatalf("meta = %+v", d.Meta)
	}
	if len(d.Lint) != 0 {
		t.Fatalf("lint = %v", d.Lint)
	}
}

func TestParseErrorsNameTheLine(t *testing.T) {
	cases := []struct {
		name, in string
		line     int
		reason   string
	}{
		{"no frontmatter", "# hi\n", 1, "no frontmatter"},
		{"unclosed", "---\ntitle: x\n", 1, "not closed"},
		{"bad yaml", "---\ntitle: x\nstage: [\n---\n", 3, "frontmatter:"},
		{"bad stage", "---\ntitle: x\nstage: robotic\n---\n", 3, "stage must be one of"},
		{"bad date", "---\ntitle: x\ncreated: yesterday\n---\n", 3, "not a date"},
		{"bad review_every", "---\ntitle: x\nreview_every: -3\n---\n", 3, "review_every"},
		{"tags not a list", "---\ntags: finance\n---\n", 2, "tags must be a list"},
		{"duplicate key", "---\ntitle: a\ntitle: b\n---\n", 3, "duplicate key"},
		{"not a mapping", "---\n- a\n---\n", 2, "mapping"},
		{"title list", "---\ntitle: [a]\n---\n", 2, "title must be a string"},
	}
	for _, c := range cases {
		_, err := Parse("p.md", []byte(c.in))
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("%s: err = %v, want ParseError", c.name, err)
			continue
		}
		if pe.Line != c.line || !strings.Contains(pe.Reason, c.reason) {
			t.Errorf("%s: got %s, want line %d containing %q", c.name, pe.Error(), c.line, c.reason)
		}
	}
}

func TestLintProblems(t *testing.T) {
	in := "---\ntitle: x\nstgae: manual\n---\n\n## Trigger\n\n```\n## Steps\n```\n\n## Trigger\n"
	d, err := Parse("p.md", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range d.Lint {
		got = append(got, p.String())
	}
	all := strings.Join(got, "\n")
	for _, want := range []string{`p.md:3: unknown key "stgae"`, `missing key "stage"`, `missing key "created"`,
		`p.md:12: duplicate section "Trigger"`, `missing section "## Steps"`, `missing section "## Notes"`} {
		if !strings.Contains(all, want) {
			t.Errorf("lint lacks %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, `missing section "## Trigger"`) {
		t.Errorf("Trigger reported missing:\n%s", all)
	}
}

func TestDue(t *testing.T) {
	day := func(s string) time.Time { tm, _ := time.Parse(DateLayout, s); return tm }
	m := Meta{LastReviewed: "2026-01-01", ReviewEvery: 10}
	if m.Due(day("2026-01-10"), 30) {
		t.Error("due one day early")
	}
	if !m.Due(day("2026-01-11"), 30) {
		t.Error("not due on the day")
	}
	m.ReviewEvery = 0 // instance default
	if m.Due(day("2026-01-30"), 30) || !m.Due(day("2026-01-31"), 30) {
		t.Error("default interval not applied")
	}
	if !(Meta{}).Due(day("2026-01-01"), 30) {
		t.Error("never reviewed is not due")
	}
}

func newStore(t *testing.T) *Store {
	t.Helper()
	dir := t.TempDir()
	tpl, err := os.ReadFile(filepath.Join("..", "..", "templates", "playbook.md"))
	if err != nil {
		t.Fatal(err)
	}
	return &Store{Dir: filepath.Join(dir, "playbooks"), LockPath: filepath.Join(dir, "playbooks", ".lock"),
		Root: safefile.Beneath(dir), ReviewEvery: 30, Template: tpl, Now: func() time.Time { return time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC) }}
}

func TestNewFromTemplate(t *testing.T) {
	s := newStore(t)
	p, err := s.New("weekly-invoices", NewOptions{Title: `Invoices "weekly": all`})
	if err != nil {
		t.Fatal(err)
	}
	d, _, err := s.Get("weekly-invoices")
	if err != nil {
		t.Fatal(err)
	}
	if d.Path != p || d.Meta.Title != `Invoices "weekly": all` || d.Meta.Created != "2026-03-04" || d.Meta.ReviewEvery != 30 {
		t.Fatalf("meta = %+v", d.Meta)
	}
	if len(d.Lint) != 0 {
		t.Fatalf("template playbook fails lint: %v", d.Lint)
	}
	if _, err := s.New("weekly-invoices", NewOptions{}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("overwrite: %v", err)
	}
	for _, bad := range []string{"Weekly", "a_b", "-a", "a--b", "", strings.Repeat("a", 65), "../x"} {
		if _, err := s.New(bad, NewOptions{}); err == nil {
			t.Errorf("name %q accepted", bad)
		}
	}
}

func TestNewFromSource(t *testing.T) {
	s := newStore(t)
	body := "## Trigger\nx\n## Inputs\n## Steps\n## Outputs\n## Judgment Calls\n## Sensitive Data\n## Automation Potential\n## Notes\n"
	if _, err := s.New("a", NewOptions{Source: []byte(body), Title: "Alpha"}); err != nil {
		t.Fatal(err)
	}
	d, _, _ := s.Get("a")
	if d.Meta.Title != "Alpha" || !strings.HasPrefix(d.Body(), "\n# Alpha\n") || len(d.Lint) != 0 {
		t.Fatalf("meta %+v body %q lint %v", d.Meta, d.Body(), d.Lint)
	}
	// Frontmatter in the source is kept and completed.
	src := "---\nstage: assisted\ntags: [home]\n---\n# Beta\n" + body
	if _, err := s.New("b", NewOptions{Source: []byte(src)}); err != nil {
		t.Fatal(err)
	}
	d, _, _ = s.Get("b")
	if d.Meta.Title != "Beta" || d.Meta.Stage != "assisted" || d.Meta.Tags[0] != "home" || d.Meta.Updated != "2026-03-04" {
		t.Fatalf("meta %+v", d.Meta)
	}
	// So is frontmatter saved with a byte order mark and a spaced delimiter
	// (frontmatter.Starts): it is not mistaken for body text.
	if _, err := s.New("bom", NewOptions{Source: []byte("\ufeff--- \nstage: assisted\n---\n# Bom\n" + body)}); err != nil {
		t.Fatal(err)
	}
	if d, _, _ = s.Get("bom"); d.Meta.Stage != "assisted" || d.Meta.Title != "Bom" || strings.Contains(d.Body(), "stage:") {
		t.Fatalf("meta %+v body %q", d.Meta, d.Body())
	}
	// Unknown keys (typos) are refused like missing sections.
	_, err := s.New("b2", NewOptions{Source: []byte("---\nstgae: assisted\n---\n" + body)})
	if err == nil || !strings.Contains(err.Error(), `unknown key "stgae"`) {
		t.Fatalf("err = %v", err)
	}
	// Missing sections are refused and nothing is written.
	_, err = s.New("c", NewOptions{Source: []byte("# C\n## Trigger\n")})
	if err == nil || !strings.Contains(err.Error(), "lacks sections: Inputs, Steps") {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(s.Path("c")); err == nil {
		t.Fatal("file written despite error")
	}
}

func writeGood(t *testing.T, s *Store, name string) string {
	t.Helper()
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := s.Path(name)
	if err := os.WriteFile(p, []byte(good), 0o640); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSetStage(t *testing.T) {
	s := newStore(t)
	p := writeGood(t, s, "inv")
	if _, err := s.SetStage("inv", "supervised", "skip"); err == nil || !strings.Contains(err.Error(), "cannot jump") {
		t.Fatalf("jump allowed: %v", err)
	}
	if _, err := s.SetStage("inv", "assisted", " "); err == nil {
		t.Fatal("empty reason accepted")
	}
	if _, err := s.SetStage("inv", "robot", "x"); err == nil {
		t.Fatal("unknown stage accepted")
	}
	ch, err := s.SetStage("inv", "assisted", "drafts are good")
	if err != nil || ch.From != "manual" || ch.To != "assisted" {
		t.Fatalf("%+v %v", ch, err)
	}
	ch, err = s.SetStage("inv", "supervised", "two clean months")
	if err != nil {
		t.Fatal(err)
	}
	ch, err = s.SetStage("inv", "manual", "bank changed its site")
	if err != nil || ch.From != "supervised" {
		t.Fatalf("%+v %v", ch, err)
	}
	data, _ := os.ReadFile(p)
	got := string(data)
	want := strings.Replace(good, "stage: manual", "stage: manual", 1)
	want = strings.Replace(want, `updated: "2026-01-05"`, `updated: "2026-03-04"`, 1)
	want = strings.Replace(want, "Some prose the user wrote.\n",
		"Some prose the user wrote.\n\n- 2026-03-04 stage manual → assisted: drafts are good\n"+
			"- 2026-03-04 stage assisted → supervised: two clean months\n"+
			"- 2026-03-04 stage supervised → manual: bank changed its site\n", 1)
	if got != want {
		t.Fatalf("file after stage changes:\n%s\nwant:\n%s", got, want)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode changed to %v", fi.Mode().Perm())
	}
	// Same stage: nothing written.
	before, _ := os.ReadFile(p)
	if ch, err := s.SetStage("inv", "manual", "again"); err != nil || ch.From != "manual" {
		t.Fatalf("%+v %v", ch, err)
	}
	after, _ := os.ReadFile(p)
	if string(before) != string(after) {
		t.Fatal("same-stage change rewrote the file")
	}
}

func TestReviewed(t *testing.T) {
	s := newStore(t)
	p := writeGood(t, s, "inv")
	r, err := s.Reviewed("inv", "steps 3 and 4 merged")
	if err != nil || r.NextReview != "2026-03-18" {
		t.Fatalf("%+v %v", r, err)
	}
	d, e, err := s.Get("inv")
	if err != nil || d.Meta.LastReviewed != "2026-03-04" || e.Due {
		t.Fatalf("%+v %+v %v", d.Meta, e, err)
	}
	data, _ := os.ReadFile(p)
	if !strings.Contains(string(data), "Some prose the user wrote.\n\n- 2026-03-04 reviewed: steps 3 and 4 merged\n\n## Appendix\n\nkept as is\n") {
		t.Fatalf("note misplaced:\n%s", data)
	}
}

func TestMalformedLeftAlone(t *testing.T) {
	s := newStore(t)
	os.MkdirAll(s.Dir, 0o755)
	bad := "---\ntitle: x\nstage: [\n---\n"
	p := s.Path("bad")
	os.WriteFile(p, []byte(bad), 0o644)
	if _, err := s.Reviewed("bad", ""); err == nil || !strings.Contains(err.Error(), p+":3:") {
		t.Fatalf("err = %v", err)
	}
	if _, err := s.SetStage("bad", "assisted", "x"); err == nil {
		t.Fatal("stage on malformed file succeeded")
	}
	data, _ := os.ReadFile(p)
	if string(data) != bad {
		t.Fatal("malformed file rewritten")
	}
	writeGood(t, s, "good")
	entries, problems, err := s.List()
	if err != nil || len(entries) != 1 || len(problems) != 1 || problems[0].Path != p {
		t.Fatalf("%v %v %v", entries, problems, err)
	}
}

func TestAppendNoteCreatesSection(t *testing.T) {
	in := "---\ntitle: x\n---\n# X\nbody"
	out := appendNote([]byte(in), 2, "2026-01-01 reviewed")
	if string(out) != "---\ntitle: x\n---\n# X\nbody\n\n## Notes\n\n- 2026-01-01 reviewed\n" {
		t.Fatalf("%q", out)
	}
	in = "---\ntitle: x\n---\n## Notes\n## Next\n"
	out = appendNote([]byte(in), 2, "n")
	if string(out) != "---\ntitle: x\n---\n## Notes\n\n- n\n\n## Next\n" {
		t.Fatalf("%q", out)
	}
}

func TestSetKeys(t *testing.T) {
	in := "---\ntitle: x\nupdated:\n  2026-01-01\n# about tags\ntags:\n- a\n---\nbody\n"
	d, err := Parse("p.md", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	out, err := d.setKeys([][2]string{{"last_reviewed", `"2026-02-02"`}, {"title", `"y"`}, {"updated", `"2026-02-02"`}})
	if err != nil {
		t.Fatal(err)
	}
	want := "---\ntitle: \"y\"\nupdated: \"2026-02-02\"\n# about tags\ntags:\n- a\nlast_reviewed: \"2026-02-02\"\n---\nbody\n"
	if string(out) != want {
		t.Fatalf("got  %q\nwant %q", out, want)
	}
	d, err = Parse("p.md", []byte("---\n{title: x, stage: manual}\n---\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.setKeys([][2]string{{"stage", "assisted"}}); err == nil || !strings.Contains(err.Error(), "p.md:2: cannot update") {
		t.Fatalf("flow mapping edited: %v", err)
	}
}

func TestEmbeddedTemplateIsValid(t *testing.T) {
	tpl, err := hobbs.Templates.Open("playbook.md")
	if err != nil {
		t.Fatal(err)
	}
	tpl.Close()
	for _, p := range []string{"{{TITLE}}", "{{DATE}}", "{{REVIEW_EVERY}}"} {
		data, _ := os.ReadFile(filepath.Join("..", "..", "templates", "playbook.md"))
		if !strings.Contains(string(data), p) {
			t.Errorf("template lacks placeholder %s", p)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(good))
	f.Add([]byte("---\n---\n"))
	f.Add([]byte("---\ntitle: \"a\"\nstage: manual\n---\n## Notes\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Parse("f.md", data)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Line < 0 {
				t.Fatalf("bad error %v", err)
			}
			return
		}
		// Whatever parses must still parse after our edits, with the values set.
		c, err := d.setKeys([][2]string{{"last_reviewed", `"2026-02-02"`}, {"stage", "assisted"}})
		if err != nil {
			return // refused: the file is left alone
		}
		c = appendNote(c, d.fmEnd, "2026-02-02 reviewed")
		d2, err := Parse("f.md", c)
		if err != nil {
			t.Fatalf("edit broke the file: %v\n%q\n->\n%q", err, data, c)
		}
		if d2.Meta.LastReviewed != "2026-02-02" || d2.Meta.Stage != "assisted" {
			t.Fatalf("edit not applied: %+v\n%q", d2.Meta, c)
		}
	})
}

// Concurrent writers (sub-agents) serialise on the lock: no lost update.
func TestConcurrentWritersLoseNothing(t *testing.T) {
	s := newStore(t)
	p := writeGood(t, s, "inv")
	const n = 30
	errc := make(chan error, n)
	for i := 0; i < n; i++ {
		go func(i int) {
			_, err := s.Reviewed("inv", fmt.Sprintf("note %d", i))
			errc <- err
		}(i)
	}
	for i := 0; i < n; i++ {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	data, _ := os.ReadFile(p)
	d, err := Parse(p, data)
	if err != nil || len(d.Lint) != 0 {
		t.Fatalf("%v %v\n%s", err, d.Lint, data)
	}
	for i := 0; i < n; i++ {
		if !strings.Contains(string(data), fmt.Sprintf("- 2026-03-04 reviewed: note %d\n", i)) {
			t.Fatalf("note %d lost:\n%s", i, data)
		}
	}
	if c := strings.Count(string(data), "reviewed: note"); c != n {
		t.Fatalf("%d notes, want %d", c, n)
	}
}

// A file saved by an editor that writes a byte order mark and leaves spaces
// after the closing "---" parses like the other formats (frontmatter.Block)
// and line-preserving edits keep both.
func TestParseBOMAndSpacedDelimiter(t *testing.T) {
	in := "\ufeff---\ntitle: x\nstage: manual\n--- \nbody\n"
	d, err := Parse("p.md", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if d.Meta.Title != "x" || d.Body() != "body\n" {
		t.Fatalf("meta %+v body %q", d.Meta, d.Body())
	}
	out, err := d.setKeys([][2]string{{"stage", "assisted"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "\ufeff---\ntitle: x\nstage: assisted\n--- \nbody\n"; string(out) != want {
		t.Fatalf("got  %q\nwant %q", out, want)
	}
}

// playbooks/ is the agent's to write: a playbook planted as a link to a
// host file, or as a FIFO, is reported (list, lint, show), never followed,
// never blocks, and is never rewritten; the link's target is unchanged.
func TestPlantedLinksAndFIFOsRefused(t *testing.T) {
	s := newStore(t)
	writeGood(t, s, "real")
	outside := filepath.Join(t.TempDir(), "host.md")
	if err := os.WriteFile(outside, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, s.Path("linked")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(s.Path("piped"), 0o600); err != nil {
		t.Fatal(err)
	}
	entries, problems, err := s.List()
	if err != nil || len(entries) != 1 || entries[0].Name != "real" || len(problems) != 2 {
		t.Fatalf("list: %v %v %v", entries, problems, err)
	}
	if got := fmt.Sprint(problems); !strings.Contains(got, "linked.md: is a symbolic link") || !strings.Contains(got, "piped.md: is a FIFO") {
		t.Fatalf("problems: %s", got)
	}
	if lint, _, err := s.Lint(); err != nil || len(lint) != 2 {
		t.Fatalf("lint: %v %v", lint, err)
	}
	if _, _, err := s.Get("linked"); err == nil || !strings.Contains(err.Error(), "is a symbolic link") {
		t.Fatalf("get through a link: %v", err)
	}
	if _, err := s.SetStage("linked", "assisted", "why"); err == nil {
		t.Fatal("set-stage through a link succeeded")
	}
	if _, err := s.Reviewed("linked", ""); err == nil {
		t.Fatal("reviewed through a link succeeded")
	}
	if b, _ := os.ReadFile(outside); string(b) != good {
		t.Fatalf("host file changed: %q", b)
	}
	if fi, err := os.Lstat(s.Path("linked")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the planted link was replaced: %v", err)
	}
	// playbooks/ itself a link elsewhere: refused, nothing created there.
	elsewhere := t.TempDir()
	if err := os.Rename(s.Dir, filepath.Join(elsewhere, "playbooks")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(elsewhere, "playbooks"), s.Dir); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.List(); !errors.Is(err, safefile.ErrUnsafe) {
		t.Fatalf("list through a linked playbooks/: %v", err)
	}
	if _, err := s.New("fresh", NewOptions{}); !errors.Is(err, safefile.ErrUnsafe) {
		t.Fatalf("new through a linked playbooks/: %v", err)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "playbooks", "fresh.md")); err == nil {
		t.Fatal("new wrote through the linked playbooks/")
	}
}

// Attack: a playbook the agent made huge (sparse) is a problem named in
// list and lint, refused by get, and never read.
func TestOversizePlaybookRefused(t *testing.T) {
	s := newStore(t)
	writeGood(t, s, "real")
	writeGood(t, s, "huge")
	if err := os.Truncate(s.Path("huge"), instance.MaxPlaybookFile+1); err != nil {
		t.Fatal(err)
	}
	entries, problems, err := s.List()
	if err != nil || len(entries) != 1 || entries[0].Name != "real" || len(problems) != 1 ||
		!strings.Contains(fmt.Sprint(problems), "huge.md: is larger than 1 MiB (1048577 bytes): not read") {
		t.Fatalf("list: %v %v %v", entries, problems, err)
	}
	if lint, _, err := s.Lint(); err != nil || len(lint) != 1 {
		t.Fatalf("lint: %v %v", lint, err)
	}
	if _, _, err := s.Get("huge"); err == nil || !strings.Contains(err.Error(), "is larger than 1 MiB") {
		t.Fatalf("get: %v", err)
	}
}
