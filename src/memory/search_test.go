package memory

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/instance"
)

// The index must never change what a search finds: these tests compare the
// indexed search with a brute-force scan of the same files over a random
// corpus, through edits, deletes, moves, new files, a deleted or damaged
// index, and enough churn to force a postings rebuild.

var vocab = []string{"alpha", "Bravo", "charlie", "DELTA", "echo", "foxtrot", "golf", "hotel", "india", "juliett",
	"kilo", "lima", "Straße", "KELVIN", "ſtar", "naïve", "über", "zebra", "quartz", "mem", "id", "status", "x"}

func randText(r *rand.Rand, n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			if r.Intn(8) == 0 {
				b.WriteString("\n")
			} else {
				b.WriteString(" ")
			}
		}
		w := vocab[r.Intn(len(vocab))]
		if r.Intn(5) == 0 {
			w += fmt.Sprint(r.Intn(100))
		}
		b.WriteString(w)
	}
	return b.String()
}

func randFile(r *rand.Rand, id string, tier Tier) string {
	switch r.Intn(25) {
	case 0:
		return "no frontmatter " + randText(r, 5)
	case 1:
		return "---\nid: [broken\n---\n" + randText(r, 5)
	}
	status := "active"
	if tier == Archive {
		status = "archived"
	}
	tags := vocab[r.Intn(4)]
	return fmt.Sprintf("---\nid: %s\ntags: [%s]\ncreated: 2025-01-01\nreinforced: %d\nstatus: %s\n---\n\n%s\n",
		id, tags, r.Intn(4), status, randText(r, 5+r.Intn(40)))
}

type corpus struct {
	t    *testing.T
	r    *rand.Rand
	in   instance.Instance
	next int
}

func newCorpus(t *testing.T, seed int64) *corpus {
	in, _ := instance.At(t.TempDir())
	for _, d := range []string{in.MemoryActive(), in.MemoryArchive()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return &corpus{t: t, r: rand.New(rand.NewSource(seed)), in: in}
}

func (c *corpus) dir(t Tier) string {
	if t == Archive {
		return c.in.MemoryArchive()
	}
	return c.in.MemoryActive()
}

func (c *corpus) files(t Tier) []string {
	names, err := (&Store{In: c.in}).listNames(c.dir(t))
	if err != nil {
		c.t.Fatal(err)
	}
	return names
}

// add creates n new files in tier t.
func (c *corpus) add(t Tier, n int) {
	for i := 0; i < n; i++ {
		c.next++
		id := fmt.Sprintf("mem_20250101_%05d", c.next)
		c.write(filepath.Join(c.dir(t), id+".md"), randFile(c.r, id, t), true)
	}
}

// write puts content at p: atomically (a rename, as hobbs does) or in place
// (as an editor might), with a fresh mtime either way.
func (c *corpus) write(p, content string, atomic bool) {
	if atomic {
		tmp := p + ".tmp"
		if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
			c.t.Fatal(err)
		}
		if err := os.Rename(tmp, p); err != nil {
			c.t.Fatal(err)
		}
	} else if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		c.t.Fatal(err)
	}
}

func (c *corpus) pick(t Tier) string {
	names := c.files(t)
	if len(names) == 0 {
		return ""
	}
	return filepath.Join(c.dir(t), names[c.r.Intn(len(names))])
}

// mutate makes n random changes. Files in the archive are only changed by
// rename (what hobbs does); active files are also edited in place.
func (c *corpus) mutate(n int) {
	for i := 0; i < n; i++ {
		switch c.r.Intn(6) {
		case 0:
			c.add(Tier([]Tier{Active, Archive}[c.r.Intn(2)]), 1)
		case 1:
			if p := c.pick(Active); p != "" {
				c.write(p, randFile(c.r, strings.TrimSuffix(filepath.Base(p), ".md"), Active), false)
			}
		case 2:
			if p := c.pick(Archive); p != "" {
				c.write(p, randFile(c.r, strings.TrimSuffix(filepath.Base(p), ".md"), Archive), true)
			}
		case 3:
			t := Tier([]Tier{Active, Archive}[c.r.Intn(2)])
			if p := c.pick(t); p != "" {
				os.Remove(p)
			}
		case 4: // move between tiers
			from, to := Active, Archive
			if c.r.Intn(2) == 0 {
				from, to = Archive, Active
			}
			if p := c.pick(from); p != "" {
				os.Rename(p, filepath.Join(c.dir(to), filepath.Base(p)))
			}
		case 5:
			if p := c.pick(Active); p != "" {
				f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
				if err == nil {
					f.WriteString(randText(c.r, 3) + "\n")
					f.Close()
				}
			}
		}
	}
}

// snapshot is the content of every memory file in both tiers, by path.
type snapshot map[Tier][]snapFile

type snapFile struct {
	path string
	data []byte
}

// snapshot reads every file once, so that a round of queries is checked
// against the same contents without reading them again for each query.
func (c *corpus) snapshot() snapshot {
	snap := snapshot{}
	for _, t := range []Tier{Active, Archive} {
		for _, name := range c.files(t) {
			p := filepath.Join(c.dir(t), name)
			data, err := os.ReadFile(p)
			if err != nil {
				c.t.Fatal(err)
			}
			snap[t] = append(snap[t], snapFile{p, data})
		}
	}
	return snap
}

// brute is the reference: every file of the snapshot, matched line by line.
func (c *corpus) brute(snap snapshot, opt SearchOptions) []string {
	re, err := Compile(opt.Query, opt.Regex)
	if err != nil {
		c.t.Fatal(err)
	}
	out := []string{}
	for _, t := range opt.Scope.tiers() {
		for _, f := range snap[t] {
			if lines := matchLines(re, f.data); len(lines) > 0 {
				out = append(out, hitKey(f.path, lines))
			}
		}
	}
	sort.Strings(out)
	return out
}

func hitKey(p string, lines []LineHit) string {
	var b strings.Builder
	b.WriteString(p)
	for _, l := range lines {
		fmt.Fprintf(&b, "|%d:%s", l.Line, l.Text)
	}
	return b.String()
}

func (c *corpus) indexed(opt SearchOptions) []string {
	s := &Store{In: c.in}
	hits, err := s.Search(opt)
	if err != nil {
		c.t.Fatal(err)
	}
	out := []string{}
	for _, h := range hits {
		out = append(out, hitKey(h.Path, h.Lines))
	}
	sort.Strings(out)
	return out
}

// queries returns random substrings and pairs of words, then fixed queries
// for case folding and regular expressions. -short checks fewer random
// ones; all are drawn either way, so the corpus changes the same.
func (c *corpus) queries() []SearchOptions {
	var qs []SearchOptions
	for i := 0; i < 6; i++ {
		w := vocab[c.r.Intn(len(vocab))]
		// a substring of a word, in random case
		rw := []rune(w)
		a := c.r.Intn(len(rw))
		b := a + 1 + c.r.Intn(len(rw)-a)
		sub := string(rw[a:b])
		if c.r.Intn(2) == 0 {
			sub = strings.ToUpper(sub)
		}
		pair := w + " " + vocab[c.r.Intn(len(vocab))]
		if i < 2 || !testing.Short() {
			qs = append(qs, SearchOptions{Query: sub}, SearchOptions{Query: pair})
		}
	}
	qs = append(qs,
		SearchOptions{Query: "STRASSE"}, SearchOptions{Query: "ße"}, SearchOptions{Query: "STAR"},
		SearchOptions{Query: "kelvin"}, SearchOptions{Query: "NAÏVE"},
		SearchOptions{Query: "(?i)alpha.*zebra", Regex: true},
		SearchOptions{Query: "^status: archived$", Regex: true},
		SearchOptions{Query: "golf[0-9]+", Regex: true},
		SearchOptions{Query: "(echo|hotel)42", Regex: true},
		SearchOptions{Query: "lima\\s+kilo", Regex: true},
		SearchOptions{Query: "a", Regex: false},
	)
	for i := range qs {
		qs[i].Scope = ScopeAll
	}
	return qs
}

func (c *corpus) compare(round string) {
	c.t.Helper()
	snap := c.snapshot()
	for _, q := range c.queries() {
		want, got := c.brute(snap, q), c.indexed(q)
		if !reflect.DeepEqual(want, got) {
			c.t.Fatalf("%s: query %q (regex %v): indexed search found %d files, brute force %d\nindexed: %v\nbrute:   %v",
				round, q.Query, q.Regex, len(got), len(want), got, want)
		}
	}
}

// settle waits past the racy window so that stamps are trusted. A file's
// time stamps come from the kernel's coarse clock, which is never ahead of
// time.Now, so a millisecond past the window is enough.
func settle() { time.Sleep(RacyWindow + time.Millisecond) }

func withIndexTimes(t *testing.T, racy, full time.Duration) {
	oldR, oldF := RacyWindow, FullCheckEvery
	RacyWindow, FullCheckEvery = racy, full
	t.Cleanup(func() { RacyWindow, FullCheckEvery = oldR, oldF })
}

func TestIndexedSearchMatchesBruteForce(t *testing.T) {
	withIndexTimes(t, 30*time.Millisecond, time.Hour)
	seeds := []int64{1, 2}
	if testing.Short() {
		seeds = seeds[:1] // one random history of the two
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			c := newCorpus(t, seed)
			c.add(Archive, 250)
			c.add(Active, 80)
			settle()
			c.compare("fresh")
			c.compare("warm")
			for round := 0; round < 8; round++ {
				c.mutate(1 + c.r.Intn(30))
				if round%2 == 0 {
					settle()
				}
				c.compare(fmt.Sprintf("round %d", round))
				switch round {
				case 3:
					os.RemoveAll(c.in.MemoryIndex())
				case 5:
					for _, f := range []string{"archive.meta", "active.tri", "archive.state"} {
						os.WriteFile(filepath.Join(c.in.MemoryIndex(), f), []byte("HMEMMETA1\ngarbage"), 0o644)
					}
				}
			}
			// Heavy churn forces a rebuild of the postings.
			before := c.triFiles()
			c.mutate(150)
			settle()
			c.compare("after churn")
			after := c.triFiles()
			for f, b := range before {
				if bytes.Equal(b, after[f]) {
					t.Errorf("%s was not rebuilt after heavy churn", f)
				}
			}
		})
	}
}

// triFiles reads both tiers' postings files.
func (c *corpus) triFiles() map[string][]byte {
	out := map[string][]byte{}
	for _, f := range []string{"active.tri", "archive.tri"} {
		b, err := os.ReadFile(filepath.Join(c.in.MemoryIndex(), f))
		if err != nil {
			c.t.Fatal(err)
		}
		out[f] = b
	}
	return out
}

// The index really narrows: after a settle, a rare literal reads few files.
func TestIndexNarrowsCandidates(t *testing.T) {
	withIndexTimes(t, 30*time.Millisecond, time.Hour)
	c := newCorpus(t, 7)
	c.add(Archive, 300)
	id := "mem_20250101_99999"
	c.write(filepath.Join(c.dir(Archive), id+".md"), "---\nid: "+id+"\n---\nthe word xylophone\n", true)
	settle()
	s := &Store{In: c.in}
	if _, err := s.Search(SearchOptions{Query: "warm up", Scope: ScopeArchive}); err != nil {
		t.Fatal(err)
	}
	settle()
	ix, err := s.openIndex(Archive, false, useSome)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.close()
	ords, all := ix.candidates(requiredLiterals("XYLOPHONE", false))
	if all || len(ords) != 1 || ix.rec(ords[0]).ID != id {
		t.Fatalf("candidates for a rare word: all=%v %d ordinals", all, len(ords))
	}
	ords, all = ix.candidates(requiredLiterals("(?i)xylo.*phone", true))
	if all || len(ords) != 1 {
		t.Fatalf("regex literals: all=%v %d ordinals", all, len(ords))
	}
}

// An archived file edited in place (directory unchanged) is found by a full
// check, and within FullCheckEvery by every search once that period passed.
func TestArchiveInPlaceEdit(t *testing.T) {
	withIndexTimes(t, 30*time.Millisecond, time.Hour)
	c := newCorpus(t, 9)
	c.add(Archive, 50)
	settle()
	q := SearchOptions{Query: "unicorn", Scope: ScopeArchive}
	if got := c.indexed(q); len(got) != 0 {
		t.Fatal(got)
	}
	settle()
	p := c.pick(Archive)
	c.write(p, "---\nid: mem_x\n---\na unicorn\n", false)
	q.Full = true
	if got := c.indexed(q); len(got) != 1 {
		t.Fatalf("full check missed an in-place edit: %v", got)
	}
	// And with a zero trust period every search checks every file.
	settle()
	c.write(p, "---\nid: mem_x\n---\na unicorn and a pegasus\n", false)
	FullCheckEvery = 0
	if got := c.indexed(SearchOptions{Query: "pegasus", Scope: ScopeArchive}); len(got) != 1 {
		t.Fatalf("expired trust period missed an in-place edit: %v", got)
	}
}

// A changed archive directory is checked file by file: a file replaced by
// rename can get back the inode number of the file it replaced (ext4 reuses
// a freed inode at once), so a new inode cannot be what tells a changed file.
// Here the file keeps its inode (edited in place) while the directory
// changes beside it: the edit must be seen at once.
func TestArchiveChangedDirChecksEveryFile(t *testing.T) {
	withIndexTimes(t, 30*time.Millisecond, time.Hour)
	c := newCorpus(t, 13)
	c.add(Archive, 60)
	settle()
	q := SearchOptions{Query: "basilisk", Scope: ScopeArchive}
	if got := c.indexed(q); len(got) != 0 {
		t.Fatal(got)
	}
	settle()
	p := c.pick(Archive)
	old, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	c.write(p, strings.Replace(string(old), "status: archived", "status: archived\n# basilisk", 1), false)
	c.write(filepath.Join(c.dir(Archive), "mem_20250101_99999.md"), "---\nid: mem_20250101_99999\nstatus: archived\n---\nnew\n", true)
	settle()
	if got := c.indexed(q); len(got) != 1 {
		t.Fatalf("an edit in a changed archive directory was missed: %v", got)
	}
}

// A file replaced by rename under the same name (how hobbs writes) is seen
// at once, without a full check: the directory changed and so did the inode.
func TestArchiveReplacedByRename(t *testing.T) {
	withIndexTimes(t, 30*time.Millisecond, time.Hour)
	c := newCorpus(t, 11)
	c.add(Archive, 80)
	settle()
	if got := c.indexed(SearchOptions{Query: "griffin", Scope: ScopeArchive}); len(got) != 0 {
		t.Fatal(got)
	}
	settle()
	if got := c.indexed(SearchOptions{Query: "griffin", Scope: ScopeArchive}); len(got) != 0 {
		t.Fatal(got)
	}
	p := c.pick(Archive)
	old, _ := os.ReadFile(p)
	repl := strings.Replace(string(old), "status: archived", "status: archived\n# griffin", 1)
	c.write(p, repl, true)
	settle()
	if got := c.indexed(SearchOptions{Query: "griffin", Scope: ScopeArchive}); len(got) != 1 {
		t.Fatalf("a file replaced by rename was missed: %v", got)
	}
	os.Remove(p)
	settle()
	if got := c.indexed(SearchOptions{Query: "griffin", Scope: ScopeArchive}); len(got) != 0 {
		t.Fatalf("a removed file was found: %v", got)
	}
}
