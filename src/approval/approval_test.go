package approval

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

var t0 = time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)

func testDir(t *testing.T) (Dir, *time.Time) {
	now := t0
	return Dir{Root: safefile.Beneath(t.TempDir()), Now: func() time.Time { return now }}, &now
}

func ask(t *testing.T, d Dir, session, host string, tainted bool) Question {
	t.Helper()
	q := Question{ID: NewID(), Session: session, Origin: "terminal", Tainted: tainted, Method: "CONNECT", Host: host, Port: 443,
		Waiting: 1, Asked: t0, Expires: t0.Add(90 * time.Second), Answers: OffersFor(tainted)}
	if err := d.WriteQuestion(q); err != nil {
		t.Fatal(err)
	}
	return q
}

func kindOf(err error) errs.Kind {
	var e *errs.Error
	if errors.As(err, &e) {
		return e.Advice.Kind
	}
	return ""
}

func TestFirstAnswerWins(t *testing.T) {
	d, _ := testDir(t)
	q := ask(t, d, "s1", "a.example", false)
	if _, a, err := d.Give(q.ID, Session, ViaTelegram, "telegram:1", nil); err != nil || a.Answer != Session {
		t.Fatalf("first answer: %+v %v", a, err)
	}
	_, a, err := d.Give(q.ID, Deny, ViaHost, "ada", nil)
	if kindOf(err) != AlreadyAnswered || a.Answer != Session || a.Via != ViaTelegram {
		t.Fatalf("second answer: %+v %v; want told the first (session, on telegram)", a, err)
	}
	if got, ok, _ := d.ReadAnswer("s1", q.ID); !ok || got.Answer != Session {
		t.Fatalf("the answer on file: %+v", got)
	}
	if qs, _, _ := d.Waiting(); len(qs) != 0 {
		t.Fatalf("an answered question still waits: %+v", qs)
	}
}

func TestExpiredAndUnknown(t *testing.T) {
	d, now := testDir(t)
	q := ask(t, d, "s1", "a.example", false)
	*now = q.Expires
	if _, _, err := d.Give(q.ID, Once, ViaHost, "ada", nil); kindOf(err) != NotFound {
		t.Fatalf("answer after expiry: %v", err)
	}
	if qs, _, _ := d.Waiting(); len(qs) != 0 {
		t.Fatalf("an expired question still waits: %+v", qs)
	}
	for _, id := range []string{"zzzzzzzzzzzz", "../../etc/pa", "", "AAAAAAAAAAAA"} {
		if _, _, err := d.Give(id, Once, ViaHost, "ada", nil); kindOf(err) != NotFound {
			t.Errorf("answer to %q: %v", id, err)
		}
	}
	if _, _, err := d.Give(q.ID, "yes", ViaHost, "ada", nil); err == nil {
		t.Error("an unknown answer was taken")
	}
}

func TestAlwaysNotOfferedToATaintedSession(t *testing.T) {
	d, _ := testDir(t)
	q := ask(t, d, "s1", "a.example", true)
	called := false
	_, _, err := d.Give(q.ID, Always, ViaHost, "ada", func(Question) error { called = true; return nil })
	if kindOf(err) != NotOffered || called {
		t.Fatalf("Always to a tainted session: %v (policy written: %v)", err, called)
	}
	if _, ok, _ := d.ReadAnswer("s1", q.ID); ok {
		t.Fatal("an answer was written")
	}
}

func TestBeforeFailureLeavesTheQuestionOpen(t *testing.T) {
	d, _ := testDir(t)
	q := ask(t, d, "s1", "a.example", false)
	if _, _, err := d.Give(q.ID, Always, ViaHost, "ada", func(Question) error { return errors.New("policy.yaml:3: bad") }); err == nil {
		t.Fatal("no error")
	}
	if qs, _, _ := d.Waiting(); len(qs) != 1 {
		t.Fatalf("the question no longer waits: %+v", qs)
	}
}

func TestUnreadableQuestionIsReported(t *testing.T) {
	d, _ := testDir(t)
	ask(t, d, "s1", "a.example", false)
	bad := filepath.Join(d.Root.Dir(), "s1", "bbbbbbbbbbbb.q.json")
	if err := os.WriteFile(bad, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	qs, problems, err := d.Waiting()
	if err != nil || len(qs) != 1 || len(problems) != 1 || !strings.Contains(problems[0], "bbbbbbbbbbbb.q.json") {
		t.Fatalf("waiting %+v, problems %v, %v", qs, problems, err)
	}
	if b, _ := os.ReadFile(bad); string(b) != "{not json" {
		t.Fatal("the unreadable file was rewritten")
	}
}

func TestApplyDeferred(t *testing.T) {
	d, _ := testDir(t)
	q := ask(t, d, "run1", "a.example", false)
	q.Playbook = "weekly"
	d.WriteQuestion(q)
	other := ask(t, d, "run2", "b.example", false)
	other.Playbook = "daily"
	d.WriteQuestion(other)
	for _, x := range []Question{q, other} {
		if _, _, err := d.Give(x.ID, Always, ViaHost, "ada", func(q Question) error { return d.defer_(q) }); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	allow := func(pb, host, _ string) error { got = append(got, pb+" "+host); return nil }
	if errs := ApplyDeferred(d, "run1", allow); len(errs) != 0 || strings.Join(got, ",") != "weekly a.example" {
		t.Fatalf("run1's end applied %v (%v)", got, errs)
	}
	got = nil
	if ApplyDeferred(d, "run1", allow); len(got) != 0 {
		t.Fatalf("applied twice: %v", got)
	}
	if ApplyDeferred(d, "run2", allow); strings.Join(got, ",") != "daily b.example" {
		t.Fatalf("run2's end applied %v", got)
	}
}

func TestTarget(t *testing.T) {
	for _, c := range []struct {
		host string
		port int
		want string
	}{{"a.example", 443, "a.example"}, {"a.example", 80, "a.example"}, {"a.example", 8080, "a.example:8080"}, {"2001:db8::1", 8443, "[2001:db8::1]:8443"}} {
		if got := (Question{Host: c.host, Port: c.port}).Target(); got != c.want {
			t.Errorf("%s %d: %s, want %s", c.host, c.port, got, c.want)
		}
	}
}
