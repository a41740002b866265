package memory

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/hobbs-agent/hobbs/src/errs"
)

const testToken = "ghp_a1B2a1B2a1B2a1B2a1B2a1B2a1B2a1B2a1B2"

// TestAddRefusesSecrets: add, add --supersedes, supersede and a reinforce
// source holding a secret fail with a usage error that names the kind, not
// the text, and change nothing.
func TestAddRefusesSecrets(t *testing.T) {
	s := newStore(t)
	old, err := s.Add("Deploys happen from main", AddOptions{Tags: []string{"ops"}})
	if err != nil {
		t.Fatal(err)
	}
	hist, _ := os.ReadFile(s.In.MemoryHistory())
	tries := map[string]func() error{
		"add": func() error { _, err := s.Add("the token is "+testToken, AddOptions{}); return err },
		"add --supersedes": func() error {
			_, err := s.Add("now "+testToken, AddOptions{Supersedes: old.ID})
			return err
		},
		"supersede": func() error { _, err := s.Supersede(old.ID, "AKIAIOSFODNN7EXAMPLE", AddOptions{}); return err },
		"add --source": func() error {
			_, err := s.Add("Deploys are manual", AddOptions{Source: "https://u:pw-123@ci.example/"})
			return err
		},
		"add --tag":     func() error { _, err := s.Add("Deploys are manual", AddOptions{Tags: []string{testToken}}); return err },
		"reinforce src": func() error { _, err := s.Reinforce(old.ID, testToken); return err },
	}
	for name, try := range tries {
		err := try()
		var e *errs.Error
		if !errors.As(err, &e) || e.Code != errs.Usage || !strings.Contains(e.Msg, "looks like a secret") ||
			e.Advice.Kind != LooksLikeSecret {
			t.Errorf("%s: got %v, want a usage error about a secret with a vault hint", name, err)
			continue
		}
		if strings.Contains(e.Error(), "a1B2") || strings.Contains(e.Error(), "AKIA") {
			t.Errorf("%s: the error repeats the secret: %v", name, err)
		}
	}
	list, err := s.List(ListOptions{Scope: ScopeAll})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Status != StatusActive || list[0].Reinforced != 0 {
		t.Fatalf("memories changed: %+v", list)
	}
	if now, _ := os.ReadFile(s.In.MemoryHistory()); !bytes.Equal(now, hist) {
		t.Fatalf("history changed:\n%s", now)
	}
}

// TestForgetPurgeKeepsOtherLines: a purge rewrites only the lines of the
// forgotten memory; every other line stays byte for byte, and the forget
// line comes last.
func TestForgetPurgeKeepsOtherLines(t *testing.T) {
	s := newStore(t)
	a, _ := s.Add("The locker combination is 31-07-12", AddOptions{})
	b, _ := s.Add("The user likes tea", AddOptions{})
	if _, _, err := s.Archive(a.ID); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(s.In.MemoryHistory())
	res, err := s.Forget(a.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Removed || res.Tier != Archive || res.HistoryLines != 2 {
		t.Fatalf("result %+v", res)
	}
	after, _ := os.ReadFile(s.In.MemoryHistory())
	if bytes.Contains(after, []byte("31-07-12")) {
		t.Fatalf("text left in history:\n%s", after)
	}
	lines := strings.Split(strings.TrimSpace(string(after)), "\n")
	old := strings.Split(strings.TrimSpace(string(before)), "\n")
	if len(lines) != len(old)+1 || !strings.Contains(lines[len(lines)-1], `"op":"forget","id":"`+a.ID+`"`) {
		t.Fatalf("history:\n%s", after)
	}
	for i, l := range old {
		if !strings.Contains(l, a.ID) && lines[i] != l {
			t.Fatalf("line %d changed: %q -> %q", i, l, lines[i])
		}
	}
	if _, err := s.Show(b.ID); err != nil {
		t.Fatal(err)
	}
}

// TestForgetPurgeLosesNoConcurrentLine: adds running while a memory is
// purged keep every history line: the rewrite holds the lock the appends
// take.
func TestForgetPurgeLosesNoConcurrentLine(t *testing.T) {
	s0 := newStore(t)
	a, _ := s0.Add("Secret-ish note to purge", AddOptions{})
	const n = 20
	var wg sync.WaitGroup
	fail := make(chan error, n+1)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if _, err := Open(s0.In, s0.Audit).Add(fmt.Sprintf("Note number %d about lunch", i), AddOptions{}); err != nil {
				fail <- err
			}
		}(i)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if _, err := Open(s0.In, s0.Audit).Forget(a.ID, true); err != nil {
			fail <- err
		}
	}()
	wg.Wait()
	close(fail)
	for err := range fail {
		t.Fatal(err)
	}
	if got := countLines(t, s0.In.MemoryHistory()); got != n+2 {
		t.Fatalf("history has %d lines, want %d", got, n+2)
	}
	data, _ := os.ReadFile(s0.In.MemoryHistory())
	if bytes.Contains(data, []byte("Secret-ish")) {
		t.Fatal("purged text still in history")
	}
}

// TestForgetDoesNotReuseID: the next memory of the day does not take a
// forgotten id, which the history and other memories' links still name.
func TestForgetDoesNotReuseID(t *testing.T) {
	s := newStore(t)
	a, _ := s.Add("First note", AddOptions{})
	if _, err := s.Forget(a.ID, false); err != nil {
		t.Fatal(err)
	}
	b, err := s.Add("Second note", AddOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if b.ID == a.ID {
		t.Fatalf("forgotten id %s given again", a.ID)
	}
}
