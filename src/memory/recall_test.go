package memory

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
)

// memFile is a hand-made memory for the ranking tests.
type memFile struct {
	id, tier, created, status, tags, text string
	reinforced                            int
}

func writeMems(t *testing.T, in instance.Instance, mems ...memFile) {
	t.Helper()
	for _, m := range mems {
		dir := in.MemoryActive()
		if m.tier == "archive" {
			dir = in.MemoryArchive()
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		created, status := m.created, m.status
		if created == "" {
			created = "2025-01-01"
		}
		if status == "" {
			status = "active"
			if m.tier == "archive" {
				status = "archived"
			}
		}
		content := fmt.Sprintf("---\nid: %s\ntags: [%s]\ncreated: %s\nreinforced: %d\nstatus: %s\n---\n\n%s\n",
			m.id, m.tags, created, m.reinforced, status, m.text)
		if err := os.WriteFile(filepath.Join(dir, m.id+".md"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func recallIDs(t *testing.T, s *Store, opt RecallOptions) []string {
	t.Helper()
	got, err := s.Recall(opt)
	if err != nil {
		t.Fatalf("recall %q: %v", opt.Query, err)
	}
	ids := []string{}
	for _, r := range got {
		ids = append(ids, r.ID)
	}
	return ids
}

func newRecallStore(t *testing.T, mems ...memFile) *Store {
	in, _ := instance.At(t.TempDir())
	writeMems(t, in, mems...)
	return &Store{In: in}
}

// Each case is a small instance where the order follows from one rule of
// the ranking.
func TestRecallRanking(t *testing.T) {
	cases := []struct {
		name  string
		mems  []memFile
		query string
		want  []string
	}{
		{
			name: "every word of the question beats one word repeated; a memory without any is left out",
			mems: []memFile{
				{id: "a", text: "The car is red. The car is fast. The car is old."},
				{id: "b", text: "We moved the car insurance to Acme."},
				{id: "c", text: "The user prefers Helix over Vim."},
			},
			query: "what did we decide about the car insurance?",
			want:  []string{"b", "a"},
		},
		{
			name: "stemming: researching finds researched and research",
			mems: []memFile{
				{id: "a", text: "Caroline researched adoption agencies."},
				{id: "b", text: "Melanie likes pottery."},
				{id: "c", text: "Research on adoption takes time."},
			},
			query: "Who was researching adoptions?",
			want:  []string{"a", "c"},
		},
		{
			name: "a rare word outweighs a common one",
			mems: []memFile{
				{id: "common1", text: "The user went to the shop."},
				{id: "common2", text: "The user went to the park."},
				{id: "common3", text: "The user."},
				{id: "rare", text: "Bought a kayak."},
			},
			query: "user kayak",
			want:  []string{"rare", "common3", "common1", "common2"},
		},
		{
			name: "a tag counts: the tagged memory first",
			mems: []memFile{
				{id: "a", text: "Pay the invoices on Mondays."},
				{id: "b", text: "Pay the invoices on Fridays.", tags: "finance"},
			},
			query: "finance invoices",
			want:  []string{"b", "a"},
		},
		{
			name: "a question about when favours the memory that says when",
			mems: []memFile{
				{id: "a", text: "Caroline went to the support group.", created: "2025-03-10"},
				{id: "b", text: "Caroline went to the support group last Friday.", created: "2025-03-10"},
			},
			query: "When did Caroline go to the support group?",
			want:  []string{"b", "a"},
		},
		{
			name: "the memory's own month and year do not say when",
			mems: []memFile{
				{id: "a", text: "In March 2025 Caroline went to the support group.", created: "2025-03-10"},
				{id: "b", text: "Yesterday Caroline went to the support group.", created: "2025-03-10"},
			},
			query: "When did Caroline go to the support group?",
			want:  []string{"b", "a"},
		},
		{
			name: "a month and year in the question favour memories created then",
			mems: []memFile{
				{id: "a", text: "Decided to buy a new bike.", created: "2025-03-10"},
				{id: "b", text: "Decided to buy a new bike.", created: "2024-07-02"},
				{id: "c", text: "Decided to buy a new bike.", created: "2025-07-20"},
			},
			query: "What did I buy in July 2024?",
			want:  []string{"b", "c", "a"},
		},
		{
			name: "reinforcement breaks an even match",
			mems: []memFile{
				{id: "a", text: "The team deploys on Tuesdays.", created: "2025-01-01"},
				{id: "b", text: "The team deploys on Thursdays.", created: "2025-01-01", reinforced: 3},
			},
			query: "when does the team deploy",
			want:  []string{"b", "a"},
		},
		{
			name: "a superseded memory ranks below its successor",
			mems: []memFile{
				{id: "old", tier: "archive", status: "superseded", text: "The team deploys on Tuesdays.", created: "2025-01-01"},
				{id: "new", text: "The team deploys on Thursdays.", created: "2025-01-01"},
			},
			query: "team deploy",
			want:  []string{"new", "old"},
		},
		{
			name: "an even match: the newest first",
			mems: []memFile{
				{id: "a", text: "Standup at nine.", created: "2024-05-01"},
				{id: "b", text: "Standup at ten.", created: "2025-05-01"},
				{id: "c", text: "Standup at eleven.", created: "2023-05-01"},
			},
			query: "standup",
			want:  []string{"b", "a", "c"},
		},
		{
			name: "memories of a day that answers the question rise together",
			mems: []memFile{
				{id: "day1-trip", text: "We planned the trip to Lisbon and booked the hotel.", created: "2025-04-01T10:00:00Z"},
				{id: "day1-flight", text: "The flight leaves at noon.", created: "2025-04-01T10:05:00Z"},
				{id: "day2-flight", text: "The flight to Berlin was delayed.", created: "2025-06-01"},
			},
			query: "Lisbon trip flight",
			want:  []string{"day1-trip", "day1-flight", "day2-flight"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newRecallStore(t, c.mems...)
			got := recallIDs(t, s, RecallOptions{Query: c.query, Scope: ScopeAll})
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("recall %q = %v, want %v", c.query, got, c.want)
			}
		})
	}
}

func TestRecallScopeTagsLimit(t *testing.T) {
	s := newRecallStore(t,
		memFile{id: "act", text: "The boat is blue.", tags: "boat"},
		memFile{id: "arc", tier: "archive", text: "The boat was green.", tags: "boat, old"},
		memFile{id: "other", text: "The boat has a motor.", tags: "motor"},
	)
	if got := recallIDs(t, s, RecallOptions{Query: "boat"}); reflect.DeepEqual(got, []string{}) || contains(got, "arc") {
		t.Errorf("active scope: %v (the archived memory must not be there)", got)
	}
	if got := recallIDs(t, s, RecallOptions{Query: "boat", Scope: ScopeArchive}); !reflect.DeepEqual(got, []string{"arc"}) {
		t.Errorf("archive scope: %v", got)
	}
	if got := recallIDs(t, s, RecallOptions{Query: "boat", Scope: ScopeAll}); len(got) != 3 || !contains(got, "arc") {
		t.Errorf("all: %v", got)
	}
	if got := recallIDs(t, s, RecallOptions{Query: "boat", Scope: ScopeAll, Tags: []string{"OLD", "motor"}}); len(got) != 2 || contains(got, "act") {
		t.Errorf("tags: %v", got)
	}
	if got := recallIDs(t, s, RecallOptions{Query: "boat", Scope: ScopeAll, Limit: 1}); len(got) != 1 {
		t.Errorf("limit 1: %v", got)
	}
	got, err := s.Recall(RecallOptions{Query: "boat", Scope: ScopeAll, Limit: 1})
	if err != nil || got[0].Text == "" || got[0].Path == "" || got[0].Score <= 0 || got[0].Tier == "" || got[0].Status == "" {
		t.Errorf("a recalled memory lacks a field: %+v, %v", got, err)
	}
	_, err = s.Recall(RecallOptions{Query: "what is it, and when?"})
	if errs.Code(err) != errs.Usage {
		t.Errorf("a query of stop words: %v, want a usage error", err)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Malformed files and duplicate ids are never recalled; the malformed file
// is reported.
func TestRecallSkipsBadFiles(t *testing.T) {
	s := newRecallStore(t,
		memFile{id: "good", text: "The lighthouse keeper."},
		memFile{id: "dup", text: "A lighthouse in Brittany."},
		memFile{id: "dup2", tier: "archive", text: "Another lighthouse in Brittany."},
	)
	// dup2's file claims dup's id.
	p := filepath.Join(s.In.MemoryArchive(), "dup2.md")
	b, _ := os.ReadFile(p)
	os.WriteFile(p, bytes.Replace(b, []byte("id: dup2"), []byte("id: dup"), 1), 0o644)
	os.WriteFile(filepath.Join(s.In.MemoryActive(), "broken.md"), []byte("---\nid: [x\n---\nlighthouse lighthouse\n"), 0o644)
	got := recallIDs(t, s, RecallOptions{Query: "lighthouse brittany", Scope: ScopeAll})
	if !reflect.DeepEqual(got, []string{"dup", "good"}) {
		t.Errorf("recalled %v, want [dup good]", got)
	}
}

// The index is derived: recall gives the same answer from the terms file,
// from the files alone, and after the index is deleted, damaged, stale or
// built by a search.
func TestRecallIndexRebuild(t *testing.T) {
	withIndexTimes(t, 30*time.Millisecond, time.Hour)
	c := newCorpus(t, 21)
	c.add(Archive, 120)
	c.add(Active, 40)
	settle()
	s := &Store{In: c.in}
	q := RecallOptions{Query: "alpha bravo kelvin", Scope: ScopeAll, Limit: 30}
	want := c.recallRef(q)
	if len(want) < 10 {
		t.Fatalf("the corpus recalls only %d memories", len(want))
	}
	check := func(step string) {
		t.Helper()
		if got := c.recalled(q); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: recall = %v\nwant %v", step, got, want)
		}
		for _, tier := range []string{"active", "archive"} {
			b, err := os.ReadFile(filepath.Join(c.in.MemoryIndex(), tier+".terms"))
			if err != nil || !bytes.HasPrefix(b, []byte(termsMagic)) {
				t.Fatalf("%s: %s.terms not rebuilt: %v", step, tier, err)
			}
		}
	}
	check("first")
	check("warm")
	os.RemoveAll(c.in.MemoryIndex())
	check("index deleted")
	terms := filepath.Join(c.in.MemoryIndex(), "archive.terms")
	old, _ := os.ReadFile(terms)
	os.WriteFile(terms, []byte(termsMagic+"garbage"), 0o644)
	check("terms garbled")
	os.RemoveAll(c.in.MemoryIndex())
	if _, err := s.Search(SearchOptions{Query: "alpha", Scope: ScopeAll}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(terms, old, 0o644) // a terms file of another build
	os.Remove(filepath.Join(c.in.MemoryIndex(), "active.terms"))
	check("terms stale or missing")
	// Damage inside a posting list, or in the document entries: the files
	// are read instead.
	b, _ := os.ReadFile(terms)
	b[len(b)-3] ^= 0xff
	os.WriteFile(terms, b, 0o644)
	active := filepath.Join(c.in.MemoryIndex(), "active.terms")
	b, _ = os.ReadFile(active)
	b[termsHeader+4+docEntry+1] ^= 0xff // the second document's entry
	os.WriteFile(active, b, 0o644)
	if got := c.recalled(q); !reflect.DeepEqual(got, want) {
		t.Fatalf("damaged list and document entry: recall = %v\nwant %v", got, want)
	}
}

// A search does not rebuild the index for recall's sake: the terms file
// is only needed (and rebuilt when missing) by recall.
func TestSearchLeavesMissingTerms(t *testing.T) {
	withIndexTimes(t, 30*time.Millisecond, time.Hour)
	c := newCorpus(t, 5)
	c.add(Active, 30)
	settle()
	s := &Store{In: c.in}
	if _, err := s.Search(SearchOptions{Query: "alpha"}); err != nil {
		t.Fatal(err)
	}
	terms := filepath.Join(c.in.MemoryIndex(), "active.terms")
	tri, _ := os.ReadFile(filepath.Join(c.in.MemoryIndex(), "active.tri"))
	os.Remove(terms)
	if _, err := s.Search(SearchOptions{Query: "alpha"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(terms); err == nil {
		t.Fatal("a search rebuilt the index for a missing terms file")
	}
	if _, err := s.Recall(RecallOptions{Query: "alpha"}); err != nil {
		t.Fatal(err)
	}
	tri2, _ := os.ReadFile(filepath.Join(c.in.MemoryIndex(), "active.tri"))
	if _, err := os.Stat(terms); err != nil || bytes.Equal(tri, tri2) {
		t.Fatalf("recall did not rebuild the index without its terms file: %v", err)
	}
}

// recallRef is recall reading every file (no terms file).
func (c *corpus) recallRef(q RecallOptions) []string {
	recallReadAll = true
	defer func() { recallReadAll = false }()
	return c.recalled(q)
}

// recalled returns "id score" of each memory recalled.
func (c *corpus) recalled(q RecallOptions) []string {
	got, err := (&Store{In: c.in}).Recall(q)
	if err != nil {
		c.t.Fatal(err)
	}
	out := []string{}
	for _, r := range got {
		out = append(out, fmt.Sprintf("%s %.3f", r.ID, r.Score))
	}
	return out
}

// The terms file gives recall the same ranking as reading every file,
// through edits, moves, deletes, new files and rebuilds.
func TestRecallIndexedMatchesReadingEveryFile(t *testing.T) {
	withIndexTimes(t, 30*time.Millisecond, time.Hour)
	c := newCorpus(t, 3)
	c.add(Archive, 200)
	c.add(Active, 60)
	settle()
	queries := func() []RecallOptions {
		var qs []RecallOptions
		for i := 0; i < 4; i++ {
			words := []string{vocab[c.r.Intn(len(vocab))], vocab[c.r.Intn(len(vocab))], vocab[c.r.Intn(len(vocab))]}
			qs = append(qs, RecallOptions{Query: "when did " + strings.Join(words, " and ") + " happen?", Scope: ScopeAll, Limit: 40})
		}
		return append(qs, RecallOptions{Query: "STRASSE naïve", Scope: ScopeAll, Limit: 40},
			RecallOptions{Query: "golf", Scope: ScopeActive, Limit: 40})
	}
	for round := 0; round < 8; round++ {
		for _, q := range queries() {
			want := c.recallRef(q)
			if got := c.recalled(q); !reflect.DeepEqual(got, want) {
				t.Fatalf("round %d, %q: indexed %v\nreading every file %v", round, q.Query, got, want)
			}
		}
		c.mutate(1 + c.r.Intn(20))
		if round%2 == 0 {
			settle()
		}
		if round == 5 {
			c.mutate(150) // enough to rebuild the postings
			settle()
		}
	}
}

func TestTermsFile(t *testing.T) {
	tk := newTokenizer()
	day := time.Date(2025, 3, 10, 0, 0, 0, 0, time.UTC).Unix()
	docs := []docTerms{
		tk.analyse([]byte("Caroline researched adoption in May 2024, yesterday."), []string{"family"}, day),
		{info: docInfo{flags: docUnparsed}},
		tk.analyse([]byte("Adoption papers, adoption fees."), nil, 0),
	}
	if docs[0].info.timeRefs != 3 || docs[0].info.textLen != 6 || docs[0].info.tagLen != 1 {
		t.Fatalf("doc 0: %+v", docs[0].info)
	}
	docs[2].info.reinforced, docs[2].info.flags = 4, docSuperseded
	var keys []uint64
	for _, d := range docs {
		for _, c := range d.terms {
			keys = append(keys, c.key)
		}
	}
	data := buildTerms(42, docs)
	tf, ok := openTerms(nil, data, int64(len(data)))
	if !ok || !tf.load() || tf.stamp != 42 || tf.n != 3 || tf.textTotal != 6+4 || tf.tagTotal != 1 {
		t.Fatalf("header: %+v", tf)
	}
	if !tf.need([]bool{true}) {
		t.Fatal("document entries cannot be read")
	}
	if d := tf.doc(2); d.reinforced != 4 || d.flags != docSuperseded || d.textLen != 4 || d.created != 0 {
		t.Errorf("doc 2: %+v", d)
	}
	if d := tf.doc(0); d.created != day || d.timeRefs != 3 {
		t.Errorf("doc 0: %+v", d)
	}
	l, ok := tf.postings(termKey("adopt"))
	if !ok || !reflect.DeepEqual(l, []posting{{ord: 0, tf: 1}, {ord: 2, tf: 2}}) {
		t.Errorf("adopt: %v %v", l, ok)
	}
	if l, ok := tf.postings(termKey("famili")); !ok || !reflect.DeepEqual(l, []posting{{ord: 0, tag: 1}}) {
		t.Errorf("famili: %v %v", l, ok)
	}
	if l, ok := tf.postings(termKey("zebra")); !ok || l != nil {
		t.Errorf("absent term: %v %v", l, ok)
	}
	// Damage is detected, never used.
	for _, at := range []int{termsHeader + 3, termsHeader + 4 + 20, len(data) - 1} {
		bad := append([]byte(nil), data...)
		bad[at] ^= 0x55
		tf, ok := openTerms(nil, bad, int64(len(bad)))
		if !ok {
			continue
		}
		if !tf.load() || !tf.need([]bool{true}) {
			continue
		}
		noticed := false
		for _, k := range keys {
			if _, ok := tf.postings(k); !ok {
				noticed = true
			}
		}
		if !noticed {
			t.Errorf("a byte changed at %d went unnoticed", at)
		}
	}
	if _, ok := openTerms(nil, data[:termsHeader+10], int64(termsHeader+10)); ok {
		t.Error("a file cut short opened")
	}
}
