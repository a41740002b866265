package memory

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/safefile"
)

// The agent's container can write everything under memory/: these tests
// plant what a hostile agent would (links, FIFOs, damaged index files) and
// check that host commands neither follow, block on, nor write through
// them, and say what they skipped. Each would fail if the package opened
// instance paths with os.*: a write would reach the link's target, a
// read would block on the FIFO, a link would be listed.

// within runs f and fails the test if it has not returned after 10 s (a
// read or write blocked on a FIFO); fifo, if any, is then opened so that a
// blocked open returns.
func within(t *testing.T, what, fifo string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		if fifo != "" {
			if fd, err := syscall.Open(fifo, syscall.O_RDWR|syscall.O_NONBLOCK, 0); err == nil {
				syscall.Close(fd)
			}
		}
		t.Fatalf("%s did not finish within 10 s: blocked on %s", what, fifo)
		return nil
	}
}

// names lists a directory (sorted) with each entry's type, for before/after
// comparisons.
func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name()+" "+e.Type().String())
	}
	sort.Strings(out)
	return out
}

// mentions reports whether err or one of s's problems names path.
func mentions(s *Store, err error, path string) bool {
	if err != nil && strings.Contains(err.Error(), path) {
		return true
	}
	for _, p := range s.Problems() {
		if p.Path == path {
			return true
		}
	}
	return false
}

func mustAdd(t *testing.T, s *Store, text string, tags ...string) *AddResult {
	t.Helper()
	res, err := s.Add(text, AddOptions{Tags: tags})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// A link at memory/history.jsonl to a file outside the instance: every
// change refuses to start, the target is unchanged byte for byte, the link
// stays a link, and no memory moved.
func TestHistoryLinkRefused(t *testing.T) {
	for _, name := range []string{"history.jsonl", "history.jsonl.lock", ".lock"} {
		t.Run(name, func(t *testing.T) {
			s := newStore(t)
			a := mustAdd(t, s, "The user lives in Lyon.")
			b := mustAdd(t, s, "The user drinks tea.")
			arch := mustAdd(t, s, "An old memory.")
			if _, _, err := s.Archive(arch.ID); err != nil {
				t.Fatal(err)
			}
			target := filepath.Join(t.TempDir(), "bashrc")
			orig := []byte("# ~/.bashrc\nexport PATH=$HOME/bin:$PATH\n")
			if err := os.WriteFile(target, orig, 0o644); err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(s.In.MemoryDir(), name)
			os.Remove(link)
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			before := [2][]string{names(t, s.In.MemoryActive()), names(t, s.In.MemoryArchive())}
			later := &Store{In: s.In, Now: func() time.Time { return time.Now().Add(400 * 24 * time.Hour) }}
			ops := map[string]func() error{
				"add":       func() error { _, err := s.Add("A new memory.", AddOptions{}); return err },
				"reinforce": func() error { _, err := s.Reinforce(a.ID, "x"); return err },
				"supersede": func() error { _, err := s.Supersede(b.ID, "The user drinks coffee.", AddOptions{}); return err },
				"archive":   func() error { _, _, err := s.Archive(a.ID); return err },
				"promote":   func() error { _, _, err := s.Promote(arch.ID); return err },
				"tidy":      func() error { _, err := later.Tidy(30, false); return err },
				"touch": func() error {
					l, err := s.List(ListOptions{})
					if err != nil {
						return err
					}
					return s.Touch(l)
				},
			}
			for op, f := range ops {
				err := within(t, op, "", f)
				if err == nil {
					t.Errorf("%s: a link at %s was accepted", op, name)
				} else if !errors.Is(err, safefile.ErrUnsafe) || !strings.Contains(err.Error(), link) {
					t.Errorf("%s: error does not name the link as unsafe: %v", op, err)
				}
				if got, _ := os.ReadFile(target); !bytes.Equal(got, orig) {
					t.Fatalf("%s wrote through the link: target now %q", op, got)
				}
				if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
					t.Fatalf("%s: the link was replaced (%v)", op, err)
				}
				after := [2][]string{names(t, s.In.MemoryActive()), names(t, s.In.MemoryArchive())}
				if strings.Join(after[0], ",") != strings.Join(before[0], ",") || strings.Join(after[1], ",") != strings.Join(before[1], ",") {
					t.Fatalf("%s changed the memories although it could not log it: %v -> %v", op, before, after)
				}
			}
		})
	}
}

// A FIFO at a memory file, at history.jsonl or at an index file: tidy,
// lint, list, search and context finish and name it; it stays a FIFO.
func TestFIFOsDoNotBlock(t *testing.T) {
	withIndexTimes(t, 30*time.Millisecond, time.Hour)
	s0 := newStore(t)
	mustAdd(t, s0, "The user lives in Lyon.", "profile")
	old := mustAdd(t, s0, "The user once lived in Paris.")
	if _, _, err := s0.Archive(old.ID); err != nil {
		t.Fatal(err)
	}
	in := s0.In
	places := []string{
		filepath.Join(in.MemoryActive(), "mem_20990101_001.md"),
		filepath.Join(in.MemoryArchive(), "mem_20990101_002.md"),
		in.MemoryHistory(),
		filepath.Join(in.MemoryIndex(), "active.meta"),
		filepath.Join(in.MemoryIndex(), "active.tri"),
		filepath.Join(in.MemoryIndex(), "archive.meta"),
		filepath.Join(in.MemoryIndex(), "archive.state"),
	}
	for _, fifo := range places {
		t.Run(in.Rel(fifo), func(t *testing.T) {
			// A fresh index, trusted, then the FIFO in place of the file.
			settle()
			if _, err := (&Store{In: in}).Search(SearchOptions{Query: "lyon", Scope: ScopeAll, Full: true}); err != nil {
				t.Fatal(err)
			}
			if _, err := (&Store{In: in}).Search(SearchOptions{Query: "lyon", Scope: ScopeAll}); err != nil {
				t.Fatal(err)
			}
			saved, _ := os.ReadFile(fifo)
			os.Remove(fifo)
			if err := syscall.Mkfifo(fifo, 0o644); err != nil {
				t.Fatal(err)
			}
			defer func() {
				os.Remove(fifo)
				if saved != nil {
					os.WriteFile(fifo, saved, 0o644)
				}
			}()
			ops := map[string]func(s *Store) error{
				"tidy": func(s *Store) error { _, err := s.Tidy(30, false); return err },
				"lint": func(s *Store) error { _, _, err := s.Lint(); return err },
				"list": func(s *Store) error {
					l, err := s.List(ListOptions{Scope: ScopeAll})
					if err == nil && len(l) != 2 {
						t.Errorf("list: %d memories, want 2", len(l))
					}
					return err
				},
				"search": func(s *Store) error {
					h, err := s.Search(SearchOptions{Query: "the user", Scope: ScopeAll})
					if err == nil && len(h) != 2 {
						t.Errorf("search: %d hits, want 2", len(h))
					}
					return err
				},
				"context": func(s *Store) error {
					c, err := s.BuildContext(ContextOptions{})
					if err != nil {
						return err
					}
					if !strings.Contains(c.Text, "Lyon") {
						t.Errorf("context lost the memory: %q", c.Text)
					}
					if err := s.Touch(c.Memories); err != nil && !strings.Contains(err.Error(), fifo) {
						t.Errorf("context: touch failed without naming %s: %v", fifo, err)
					}
					return nil
				},
			}
			for _, op := range []string{"list", "search", "context", "lint", "tidy"} {
				s := &Store{In: in, LockTimeout: 5 * time.Second}
				err := within(t, op, fifo, func() error { return ops[op](s) })
				if filepath.Dir(fifo) == in.MemoryArchive() && (op == "context" || op == "tidy") {
					continue // they do not look at the archive
				}
				if !mentions(s, err, fifo) {
					t.Errorf("%s: %s not reported (err %v, problems %v)", op, fifo, err, s.Problems())
				}
				if err != nil && fifo != in.MemoryHistory() {
					t.Errorf("%s failed: %v", op, err)
				}
				if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
					t.Fatalf("%s replaced the FIFO (%v)", op, err)
				}
			}
		})
	}
}

// A link in place of memory/active (to a directory of valid memories
// elsewhere): every command refuses it and nothing outside is read into
// the index or written.
func TestActiveDirLinkRefused(t *testing.T) {
	s := newStore(t)
	outside := t.TempDir()
	secret := "---\nid: mem_20250101_001\nstatus: active\ncreated: 2025-01-01\n---\n\nhost secret zanzibar\n"
	if err := os.WriteFile(filepath.Join(outside, "mem_20250101_001.md"), []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(s.In.MemoryActive())
	if err := os.Symlink(outside, s.In.MemoryActive()); err != nil {
		t.Fatal(err)
	}
	ops := map[string]func() error{
		"list":    func() error { _, err := s.List(ListOptions{}); return err },
		"search":  func() error { _, err := s.Search(SearchOptions{Query: "zanzibar"}); return err },
		"context": func() error { _, err := s.BuildContext(ContextOptions{}); return err },
		"lint":    func() error { _, _, err := s.Lint(); return err },
		"tidy":    func() error { _, err := s.Tidy(1, false); return err },
		"show":    func() error { _, err := s.Show("mem_20250101_001"); return err },
		"add":     func() error { _, err := s.Add("A new memory.", AddOptions{}); return err },
	}
	for op, f := range ops {
		err := within(t, op, "", f)
		if err == nil || !errors.Is(err, safefile.ErrUnsafe) || !strings.Contains(err.Error(), s.In.MemoryActive()) {
			t.Errorf("%s: a linked memory/active was not refused: %v", op, err)
		}
	}
	if got := names(t, outside); len(got) != 1 {
		t.Errorf("files written outside: %v", got)
	}
	filepath.WalkDir(s.In.MemoryDir(), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Type().IsRegular() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte("zanzibar")) {
				t.Errorf("%s holds text read through the link", p)
			}
		}
		return nil
	})
}

// A link at a memory file (to a memory outside) is reported, never read.
func TestMemoryFileLinkSkipped(t *testing.T) {
	withIndexTimes(t, 30*time.Millisecond, time.Hour)
	s := newStore(t)
	mustAdd(t, s, "The user lives in Lyon.")
	outside := filepath.Join(t.TempDir(), "x.md")
	os.WriteFile(outside, []byte("---\nid: mem_20250101_009\nstatus: active\n---\n\nhost secret zanzibar\n"), 0o644)
	link := filepath.Join(s.In.MemoryActive(), "mem_20250101_009.md")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	for op, f := range map[string]func(s *Store) (int, error){
		"list": func(s *Store) (int, error) { l, err := s.List(ListOptions{}); return len(l), err },
		"search": func(s *Store) (int, error) {
			h, err := s.Search(SearchOptions{Query: "zanzibar"})
			return len(h) + 1, err
		},
		"lint": func(s *Store) (int, error) { _, n, err := s.Lint(); return n, err },
	} {
		s := &Store{In: s.In}
		n, err := f(s)
		if err != nil || n != 1 || !mentions(s, nil, link) {
			t.Errorf("%s: %d, %v, problems %v", op, n, err, s.Problems())
		}
	}
	if _, err := (&Store{In: s.In}).Show("mem_20250101_009"); err == nil || !errors.Is(err, safefile.ErrUnsafe) {
		t.Errorf("show followed the link: %v", err)
	}
}

// A file over MaxFileSize is reported, not read.
func TestHugeMemoryFileSkipped(t *testing.T) {
	old := MaxFileSize
	MaxFileSize = 4096
	t.Cleanup(func() { MaxFileSize = old })
	s := newStore(t)
	mustAdd(t, s, "The user lives in Lyon.")
	big := filepath.Join(s.In.MemoryActive(), "mem_20250101_009.md")
	os.WriteFile(big, []byte("---\nid: mem_20250101_009\n---\n\n"+strings.Repeat("lyon ", 2000)), 0o644)
	for _, op := range []string{"list", "lint"} {
		s := &Store{In: s.In}
		var err error
		switch op {
		case "list":
			_, err = s.List(ListOptions{})
		case "lint":
			_, _, err = s.Lint()
		}
		if err != nil || !mentions(s, nil, big) {
			t.Errorf("%s: %v, problems %v", op, err, s.Problems())
		}
	}
}

// Index files truncated or overwritten between runs: commands rebuild (or
// report), never crash, and find what a fresh index finds.
func TestIndexDamagedBetweenRuns(t *testing.T) {
	withIndexTimes(t, 30*time.Millisecond, time.Hour)
	c := newCorpus(t, 11)
	c.add(Archive, 150)
	c.add(Active, 50)
	settle()
	c.compare("fresh")
	settle()
	c.compare("trusted")
	idx := c.in.MemoryIndex()
	damages := map[string]func(b []byte) []byte{
		"empty":       func(b []byte) []byte { return nil },
		"header only": func(b []byte) []byte { return b[:min(len(b), 12)] },
		"half":        func(b []byte) []byte { return b[:len(b)/2] },
		"one short":   func(b []byte) []byte { return b[:len(b)-1] },
		"garbage":     func(b []byte) []byte { return bytes.Repeat([]byte{0xff}, len(b)) },
		"garbled middle": func(b []byte) []byte {
			b = append([]byte(nil), b...)
			for i := len(b) * 2 / 5; i < len(b)*3/5; i++ {
				b[i] ^= 0x5a
			}
			return b
		},
		"garbled after the header": func(b []byte) []byte {
			b = append([]byte(nil), b...)
			for i := min(len(b), 40); i < min(len(b), 400); i++ {
				b[i] ^= 0x21
			}
			return b
		},
		"garbled tail": func(b []byte) []byte {
			b = append([]byte(nil), b...)
			for i := len(b) * 3 / 4; i < len(b); i++ {
				b[i] ^= 0x5a
			}
			return b
		},
	}
	// The memory files do not change below: only the index is damaged.
	queries := []SearchOptions{{Query: "alpha"}, {Query: "STRASSE"}, {Query: "golf[0-9]+", Regex: true}, {Query: "x"}}
	snap := c.snapshot()
	want := make([][]string, len(queries))
	for i := range queries {
		queries[i].Scope = ScopeAll
		want[i] = c.brute(snap, queries[i])
	}
	for _, file := range []string{"active.meta", "active.tri", "archive.meta", "archive.tri", "archive.state"} {
		for name, damage := range damages {
			p := filepath.Join(idx, file)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if err := os.WriteFile(p, damage(b), 0o644); err != nil {
				t.Fatal(err)
			}
			s := &Store{In: c.in}
			if _, err := s.List(ListOptions{Scope: ScopeAll}); err != nil {
				t.Fatalf("%s %s: list: %v", file, name, err)
			}
			if _, err := s.BuildContext(ContextOptions{}); err != nil {
				t.Fatalf("%s %s: context: %v", file, name, err)
			}
			for i, q := range queries {
				if got := c.indexed(q); !reflect.DeepEqual(want[i], got) {
					t.Fatalf("%s %s: query %q: indexed search found %d files, brute force %d", file, name, q.Query, len(got), len(want[i]))
				}
			}
		}
	}
}

// An index file truncated while a command holds it open: the command goes
// on (records it cannot read count as damaged, postings it cannot read
// narrow nothing), with no SIGBUS (the index is read, not mapped), and the
// next command rebuilds.
func TestIndexTruncatedWhileOpen(t *testing.T) {
	withIndexTimes(t, 30*time.Millisecond, time.Hour)
	c := newCorpus(t, 12)
	c.add(Archive, 400)
	settle()
	c.compare("fresh")
	settle()
	s := &Store{In: c.in}
	ix, err := s.openIndex(Archive, false, useSome)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.close()
	for _, f := range []string{"archive.meta", "archive.tri"} {
		if err := os.Truncate(filepath.Join(c.in.MemoryIndex(), f), 0); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < ix.n(); i++ {
		if r := ix.rec(i); r.Name == "" && r.ErrReason == "" {
			t.Fatalf("record %d: %+v", i, r)
		}
		ix.peek(i)
	}
	if ords, all := ix.candidates(requiredLiterals("alpha", false)); !all && len(ords) == 0 {
		t.Fatal("postings that could not be read narrowed the search to nothing")
	}
	ix.loadRecs()
	settle()
	c.compare("after the truncation")
}

// A record of an index the agent wrote cannot name a file outside the tier
// directory.
func TestIndexRecordNamesStayInTier(t *testing.T) {
	s := newStore(t)
	root := s.fs()
	tx := &tierIndex{root: root, tier: Archive, dir: s.In.MemoryArchive(), idxDir: s.In.MemoryIndex()}
	bad := []string{"../../vault/keys/identity.md", "../active/x.md", "/etc/x.md", "a/b.md", ".hidden.md", "x.txt", ""}
	var recs []record
	for _, n := range bad {
		recs = append(recs, record{Name: n, ID: "mem_x", Status: StatusArchived})
	}
	recs = append(recs, record{Name: "ok.md", ID: "mem_ok", Status: StatusArchived})
	if err := tx.saveMeta(recs, make([]byte, len(recs))); err != nil {
		t.Fatal(err)
	}
	ix := &tierIndex{root: root, tier: Archive, dir: s.In.MemoryArchive(), idxDir: s.In.MemoryIndex()}
	if !ix.loadMeta() {
		t.Fatal("meta not loaded")
	}
	for i := range bad {
		if name, _ := ix.peek(i); len(name) != 0 {
			t.Errorf("peek %q accepted", bad[i])
		}
		if r := ix.rec(i); r.Name != "" || r.ErrReason == "" {
			t.Errorf("record %q accepted: %+v", bad[i], r)
		}
	}
	if r := ix.rec(len(bad)); r.Name != "ok.md" {
		t.Errorf("good record: %+v", r)
	}
}

// Attack: a memory file named with a number past int64's. The next memory
// gets the next id of the day, never a wrapped one.
func TestOverflowingMemoryIDIgnored(t *testing.T) {
	s := newStore(t)
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	s.Now = func() time.Time { return now }
	bad := filepath.Join(s.In.MemoryActive(), "mem_20261122_9223372036854775807.md")
	os.WriteFile(bad, []byte("---\nid: mem_20261122_9223372036854775807\nstatus: active\n---\n\nplanted\n"), 0o644)
	res := mustAdd(t, s, "The user lives in Lyon.")
	if res.ID != "mem_20261122_001" {
		t.Fatalf("id %s, want mem_20261122_001", res.ID)
	}
	if _, ok := idNumber("mem_20261122_1000000", "mem_20261122_"); ok {
		t.Error("a 7-digit number parsed")
	}
	if n, ok := idNumber("mem_20261122_999999", "mem_20261122_"); !ok || n != 999999 {
		t.Errorf("999999: %d %v", n, ok)
	}
}
