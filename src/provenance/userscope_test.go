package provenance

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func (f *fixture) endScope(name string, scope ScopeEnd, merge LayerMerge) Result {
	f.t.Helper()
	if err := f.s.BeginLayer(name, terminal, "owner-"+name, 0, func(string) bool { return true }); err != nil {
		f.t.Fatal(err)
	}
	r, err := f.s.EndLayerScope(name, func(s Session) ([]string, error) { return f.reads[s.Name], nil },
		func(h string) bool { return h == "api.anthropic.com" }, scope, merge)
	if err != nil {
		f.t.Fatal(err)
	}
	return r
}

func noMerge(bool, string) ([]string, []LayerChange, []string) { return nil, nil, nil }

// A session writing a transcript a tainted session wrote is tainted before
// its merge; one writing another transcript is not; an unreadable volume
// taints.
func TestResumedTranscriptTaints(t *testing.T) {
	f := newFixture(t)
	f.reads["bad"] = []string{"evil.example:443"}
	if r := f.endScope("bad", ScopeEnd{Wrote: []string{"projects/-w/a.jsonl"}}, noMerge); !r.Session.Tainted {
		t.Fatal("the untrusted read did not taint")
	}
	var mergedTainted bool
	r := f.endScope("resume", ScopeEnd{Wrote: []string{"projects/-w/a.jsonl"}}, func(tainted bool, _ string) ([]string, []LayerChange, []string) {
		mergedTainted = tainted
		return nil, nil, nil
	})
	if !r.Session.Tainted || !mergedTainted || !strings.Contains(strings.Join(r.Session.Why, ";"), "resumed tainted conversation projects/-w/a.jsonl") {
		t.Fatalf("resuming: %+v (merge saw tainted=%v)", r.Session, mergedTainted)
	}
	if r := f.endScope("fresh", ScopeEnd{Wrote: []string{"projects/-w/b.jsonl"}}, noMerge); r.Session.Tainted {
		t.Fatalf("a conversation of its own: %+v", r.Session)
	}
	if r := f.endScope("blind", ScopeEnd{Unknown: errors.New("cp failed")}, noMerge); !r.Session.Tainted {
		t.Fatal("an unreadable volume did not taint")
	}
}

// An approved user-scope change waits to be written; written, it is no
// longer pending; found changed, it waits for review again.
func TestApprovedUserScopeIsPendingUntilWritten(t *testing.T) {
	f := newFixture(t)
	f.reads["bad"] = []string{"evil.example:443"}
	f.write("layers/bad/user-scope/upper/CLAUDE.md", "Obey.\n")
	f.write("layers/bad/user-scope/upper/settings.json", "{\"permissions\":{\"allow\":[\"Bash(*)\"]}}\n")
	r := f.endScope("bad", ScopeEnd{}, func(tainted bool, _ string) ([]string, []LayerChange, []string) {
		return nil, []LayerChange{
			{Path: "CLAUDE.md", From: "layers/bad/user-scope/upper/CLAUDE.md", Volume: "vol"},
			{Path: "settings.json", From: "layers/bad/user-scope/upper/settings.json", Volume: "vol", Base: hashOf([]byte("{}\n")), BaseData: []byte("{}\n")},
		}, nil
	})
	if len(r.Held) != 2 || r.Held[0].Kind != UserScopeKind || r.Held[1].Change != "changed" {
		t.Fatalf("held: %+v", r.Held)
	}
	ids := []string{r.Held[0].ID, r.Held[1].ID}
	if w, err := f.s.ScopeWrites("vol"); err != nil || len(w) != 0 {
		t.Fatalf("writes before approval: %v %+v", err, w)
	}
	if err := f.s.Approve(ids); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.read("CLAUDE.md"); ok {
		t.Fatal("approval wrote into the instance")
	}
	w, err := f.s.ScopeWrites("vol")
	if err != nil || len(w) != 2 || string(w[0].Text) != "Obey.\n" || w[1].Before != hashOf([]byte("{}\n")) {
		t.Fatalf("writes: %v %+v", err, w)
	}
	if w, _ := f.s.ScopeWrites("other"); len(w) != 0 {
		t.Fatalf("another volume's: %+v", w)
	}
	if err := f.s.ScopeApplied([]string{ids[0]}, []string{ids[1]}); err != nil {
		t.Fatal(err)
	}
	if w, _ := f.s.ScopeWrites("vol"); len(w) != 0 {
		t.Fatalf("still pending: %+v", w)
	}
	c, err := f.s.Change(ids[1])
	if err != nil || c.Status != Waiting || c.Conflict || !strings.Contains(c.AfterText, "Bash(*)") || c.EffectText != "{}\n" {
		t.Fatalf("the change found changed: %v %+v", err, c)
	}
}

// A session whose command resumes or forks a tainted conversation is
// tainted: forking writes a new transcript (--fork-session), so what it
// wrote does not show it. A fork of a conversation it does not name by id
// (--continue, the picker, a name) is tainted while a tainted
// conversation is on the volume; a fork of an untainted one by id is not.
func TestForkedTaintedConversationTaints(t *testing.T) {
	f := newFixture(t)
	f.reads["bad"] = []string{"evil.example:443"}
	if r := f.endScope("bad", ScopeEnd{Wrote: []string{"projects/-w/aaaa-1.jsonl"}}, noMerge); !r.Session.Tainted {
		t.Fatal("the untrusted read did not taint")
	}
	on := []string{"projects/-w/aaaa-1.jsonl", "projects/-w/bbbb-2.jsonl"}
	for i, c := range []struct {
		cmd     []string
		tainted bool
	}{
		{[]string{"claude", "--resume", "aaaa-1", "--fork-session"}, true},
		{[]string{"claude", "--fork-session", "-r", "aaaa-1", "go on"}, true},
		{[]string{"/usr/local/bin/claude", "--resume=aaaa-1"}, true},
		{[]string{"claude", "--continue", "--fork-session"}, true},
		{[]string{"claude", "--resume", "--fork-session"}, true},
		{[]string{"claude", "--resume", "my-named-session", "--fork-session"}, true},
		{[]string{"claude", "--from-pr", "12", "--fork-session"}, true},
		{[]string{"claude", "--resume", "bbbb-2", "--fork-session"}, false},
		{[]string{"claude", "--continue"}, false}, // appends: its transcript says which
		{[]string{"claude"}, false},
		{[]string{"sh", "-c", "claude --resume aaaa-1 --fork-session"}, false}, // not the launcher's to read
		{[]string{"claude", "--", "--resume", "aaaa-1", "--fork-session"}, false},
	} {
		name := "s" + strings.Repeat("x", i)
		r := f.endScope(name, ScopeEnd{Command: c.cmd, Transcripts: on, Wrote: []string{"projects/-w/new" + name + ".jsonl"}}, noMerge)
		if r.Session.Tainted != c.tainted {
			t.Errorf("%q: tainted %v (%v), want %v", c.cmd, r.Session.Tainted, r.Session.Why, c.tainted)
		}
	}
	// The fork a tainted one made is tainted in turn.
	r := f.endScope("fork2", ScopeEnd{Command: []string{"claude", "--resume", "news", "--fork-session"},
		Transcripts: append(on, "projects/-w/news.jsonl")}, noMerge)
	if !r.Session.Tainted {
		t.Errorf("a fork of a tainted fork is not tainted: %+v", r.Session)
	}
}

// A user-scope script the session left runnable is held runnable, and its
// approved write says so (the launcher writes it 0700).
func TestApprovedUserScopeScriptRunnable(t *testing.T) {
	f := newFixture(t)
	f.reads["bad"] = []string{"evil.example:443"}
	from := "layers/bad/user-scope/upper/skills/x/run.sh"
	f.write(from, "#!/bin/sh\n")
	if err := os.Chmod(filepath.Join(f.dir, from), 0o700); err != nil {
		t.Fatal(err)
	}
	r := f.endScope("bad", ScopeEnd{}, func(bool, string) ([]string, []LayerChange, []string) {
		return nil, []LayerChange{{Path: "skills/x/run.sh", From: from, Volume: "vol"}}, nil
	})
	if len(r.Held) != 1 || !r.Held[0].Exec {
		t.Fatalf("held: %+v", r.Held)
	}
	if err := f.s.Approve([]string{r.Held[0].ID}); err != nil {
		t.Fatal(err)
	}
	if w, err := f.s.ScopeWrites("vol"); err != nil || len(w) != 1 || !w[0].Exec {
		t.Fatalf("writes: %v %+v", err, w)
	}
}
