package memory

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/instance"
)

func newStore(t *testing.T) *Store {
	in, _ := instance.At(t.TempDir())
	for _, d := range []string{in.MemoryActive(), in.MemoryArchive(), in.Logs()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return Open(in, audit.New(in.FS(), in.AuditLog()))
}

// Concurrent adds of the same text through separate stores (separate lock
// file descriptors, as separate processes have) leave one memory.
func TestConcurrentAddsReinforceOneMemory(t *testing.T) {
	s0 := newStore(t)
	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := Open(s0.In, s0.Audit)
			if _, err := s.Add("Lunch is at noon.", AddOptions{Source: "agent"}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	list, err := s0.List(ListOptions{Scope: ScopeAll})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Reinforced != n-1 {
		t.Fatalf("want one memory reinforced %d times, got %+v", n-1, list)
	}
	if lines := countLines(t, s0.In.MemoryHistory()); lines != n {
		t.Fatalf("history has %d lines, want %d", lines, n)
	}
	if lines := countLines(t, s0.In.AuditLog()); lines != n {
		t.Fatalf("audit log has %d lines, want %d", lines, n)
	}
}

func countLines(t *testing.T, p string) int {
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var v map[string]any
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s: line %d is not JSON: %v", p, n+1, err)
		}
		n++
	}
	return n
}

// The history line of a change names the op, the id and both states; the
// audit log gets "memory.<op>".
func TestHistoryAndAudit(t *testing.T) {
	s := newStore(t)
	res, err := s.Add("Prefers tea.", AddOptions{Tags: []string{"drinks"}, Source: "chat"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Archive(res.ID); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(s.In.MemoryHistory())
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 {
		t.Fatalf("history: %q", data)
	}
	var h HistoryEntry
	if err := json.Unmarshal([]byte(lines[1]), &h); err != nil {
		t.Fatal(err)
	}
	if h.Op != "archive" || h.ID != res.ID || h.Before.Status != StatusActive || h.After.Status != StatusArchived ||
		h.After.Tier != Archive || h.Path != "memory/archive/"+res.ID+".md" {
		t.Fatalf("history line: %+v", h)
	}
	auditLog, _ := os.ReadFile(s.In.AuditLog())
	if !strings.Contains(string(auditLog), `"event":"memory.add"`) || !strings.Contains(string(auditLog), `"event":"memory.archive"`) {
		t.Fatalf("audit log: %s", auditLog)
	}
}

// A superseding memory keeps the old one's tags, type and source unless they
// are given; given tags replace the old set.
func TestSupersedeInherits(t *testing.T) {
	s := newStore(t)
	a, err := s.Add("Invoices are paid on Mondays", AddOptions{Tags: []string{"finance", "bills"}, Type: "preference", Source: "chat"})
	if err != nil {
		t.Fatal(err)
	}
	check := func(id string, tags []string, typ, source string) {
		t.Helper()
		m, err := s.Show(id)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(m.Tags, ",") != strings.Join(tags, ",") || m.Type != typ || m.Source != source {
			t.Fatalf("%s: tags %q type %q source %q; want %q %q %q", id, m.Tags, m.Type, m.Source, tags, typ, source)
		}
	}
	b, err := s.Supersede(a.ID, "Invoices are paid on Fridays", AddOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check(b.ID, []string{"finance", "bills"}, "preference", "chat")
	c, err := s.Supersede(b.ID, "Invoices are paid on the 5th", AddOptions{Tags: []string{"money"}, Source: "email"})
	if err != nil {
		t.Fatal(err)
	}
	check(c.ID, []string{"money"}, "preference", "email")
	d, err := s.Add("Invoices are paid on the 10th", AddOptions{Supersedes: c.ID, Type: "decision"})
	if err != nil {
		t.Fatal(err)
	}
	check(d.ID, []string{"money"}, "decision", "email")
	// The superseded memory itself is unchanged but for its status and link.
	check(a.ID, []string{"finance", "bills"}, "preference", "chat")
}

// A superseded memory edited by hand passes on only the tags and type a flag
// could give.
func TestSupersedeInheritsOnlyValidValues(t *testing.T) {
	s := newStore(t)
	a, err := s.Add("Rent is due on the 1st", AddOptions{Tags: []string{"home"}, Type: "fact"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.Show(a.ID)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(m.Path)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(b), "type: fact", "type: \"two words\"", 1)
	edited = strings.Replace(edited, "tags: [home]", "tags: [home, \"a b\"]", 1)
	if edited == string(b) {
		t.Fatalf("fixture did not change the file:\n%s", b)
	}
	if err := os.WriteFile(m.Path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	if m, err := s.Show(a.ID); err != nil || len(m.Tags) != 2 || m.Type != "two words" {
		t.Fatalf("the edited file does not read back as edited: %+v %v\n%s", m, err, edited)
	}
	c, err := s.Supersede(a.ID, "Rent is due on the 3rd", AddOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n, err := s.Show(c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(n.Tags, ",") != "home" || n.Type != "" {
		t.Fatalf("tags %q type %q; want [home] and no type", n.Tags, n.Type)
	}
}
