package userscope

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

type ent struct {
	name, data, link string
	typ              byte
	size             int64 // when not len(data): a header that lies
	mode             int64 // 0: 0644
}

func stream(t *testing.T, es ...ent) *bytes.Buffer {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range es {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Linkname: e.link, Mode: 0o644}
		if e.mode != 0 {
			h.Mode = e.mode
		}
		if e.typ == tar.TypeReg {
			h.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.typ == tar.TypeReg {
			if _, err := tw.Write([]byte(e.data)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return &b
}

func TestReadListsFilesAndKeepsOnlyWhatIsAsked(t *testing.T) {
	b := stream(t,
		ent{name: "state/", typ: tar.TypeDir},
		ent{name: "state/CLAUDE.md", typ: tar.TypeReg, data: "be kind\n"},
		ent{name: "state/skills/", typ: tar.TypeDir},
		ent{name: "state/skills/x/SKILL.md", typ: tar.TypeReg, data: "---\nname: x\n---\n"},
		ent{name: "state/projects/-w/abc.jsonl", typ: tar.TypeReg, data: `{"a":1}` + "\n"},
	)
	l, err := Read(b, "state", DefaultLimits, InScope)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(l.Paths(), " "); got != "CLAUDE.md projects/-w/abc.jsonl skills skills/x/SKILL.md" {
		t.Fatalf("paths: %s", got)
	}
	if e := l.Entries["CLAUDE.md"]; e.Kind != File || string(e.Data) != "be kind\n" || e.Size != 8 || len(e.Hash) != 64 {
		t.Fatalf("CLAUDE.md: %+v", e)
	}
	if e := l.Entries["projects/-w/abc.jsonl"]; e.Kind != File || e.Data != nil || len(e.Hash) != 64 || e.Size != 8 {
		t.Fatalf("a transcript is listed by size and hash, not kept: %+v", e)
	}
	if len(l.Problems) != 0 {
		t.Fatalf("problems: %v", l.Problems)
	}
}

// Hard links, FIFOs and devices are Odd: listed by name, never read; a
// symbolic link is a Link, its target text, never followed.
func TestReadMarksLinksFIFOsAndDevicesOdd(t *testing.T) {
	b := stream(t,
		ent{name: "state/settings.json", typ: tar.TypeSymlink, link: "/etc/shadow"},
		ent{name: "state/CLAUDE.md", typ: tar.TypeLink, link: "state/other"},
		ent{name: "state/skills/p", typ: tar.TypeFifo},
		ent{name: "state/agents/d", typ: tar.TypeChar},
		ent{name: "state/agents/b", typ: tar.TypeBlock},
	)
	l, err := Read(b, "state", DefaultLimits, InScope)
	if err != nil {
		t.Fatal(err)
	}
	if e := l.Entries["settings.json"]; e.Kind != Link || e.Target != "/etc/shadow" || e.Data != nil {
		t.Fatalf("a symbolic link: %+v", e)
	}
	for _, p := range []string{"CLAUDE.md", "skills/p", "agents/d", "agents/b"} {
		e := l.Entries[p]
		if e == nil || e.Kind != Odd || e.Data != nil || e.Why == "" {
			t.Fatalf("%s: %+v", p, e)
		}
	}
	if !strings.Contains(l.Entries["settings.json"].Why, "symbolic link") {
		t.Fatalf("why: %s", l.Entries["settings.json"].Why)
	}
	// An odd entry is always a change, even against itself.
	if d := Diff(l, l, nil); len(d) != 4 {
		t.Fatalf("diff of odd entries: %+v", d)
	}
}

// Names that are absolute, climb out or sit outside the listed directory
// are problems, never entries; a backslash is an ordinary character.
func TestReadRefusesTraversalAndAbsoluteNames(t *testing.T) {
	b := stream(t,
		ent{name: "../x", typ: tar.TypeReg, data: "x"},
		ent{name: "state/../../x", typ: tar.TypeReg, data: "x"},
		ent{name: "state/skills/../../x", typ: tar.TypeReg, data: "x"},
		ent{name: "/etc/passwd", typ: tar.TypeReg, data: "x"},
		ent{name: "other/CLAUDE.md", typ: tar.TypeReg, data: "x"},
		ent{name: "state/a\\b", typ: tar.TypeReg, data: "x"},
		ent{name: "state/ok.md", typ: tar.TypeReg, data: "ok"},
	)
	l, err := Read(b, "state", DefaultLimits, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(l.Paths(), " "); got != "a\\b ok.md" {
		t.Fatalf("paths: %q", got)
	}
	if len(l.Problems) != 5 {
		t.Fatalf("problems: %q", l.Problems)
	}
}

func TestReadCapsSizesAndCounts(t *testing.T) {
	lim := Limits{Entries: 3, File: 4, Total: 6, Names: 1 << 10}
	l, err := Read(stream(t, ent{name: "s/CLAUDE.md", typ: tar.TypeReg, data: "12345"}, ent{name: "s/projects/p/t.jsonl", typ: tar.TypeReg, data: "123456789"}), "s", lim, InScope)
	if err != nil {
		t.Fatal(err)
	}
	if e := l.Entries["CLAUDE.md"]; e.Kind != Odd || !strings.Contains(e.Why, "over the cap") || e.Data != nil {
		t.Fatalf("big: %+v", e)
	}
	if e := l.Entries["projects/p/t.jsonl"]; e.Kind != File || e.Size != 9 {
		t.Fatalf("a large file not kept is listed by size: %+v", e)
	}
	_, err = Read(stream(t, ent{name: "s/CLAUDE.md", typ: tar.TypeReg, data: "1234"}, ent{name: "s/settings.json", typ: tar.TypeReg, data: "1234"}), "s", lim, InScope)
	if !errors.Is(err, ErrTooBig) {
		t.Fatalf("total: %v", err)
	}
	_, err = Read(stream(t, ent{name: "s/a", typ: tar.TypeDir}, ent{name: "s/b", typ: tar.TypeDir}, ent{name: "s/c", typ: tar.TypeDir}, ent{name: "s/d", typ: tar.TypeDir}), "s", lim, nil)
	if !errors.Is(err, ErrTooMany) {
		t.Fatalf("entries: %v", err)
	}
	// A header claiming more than the stream holds is an error, not a
	// short file taken as whole.
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	_ = tw.WriteHeader(&tar.Header{Name: "s/CLAUDE.md", Typeflag: tar.TypeReg, Size: 4, Mode: 0o644})
	_, _ = tw.Write([]byte("12"))
	_, err = Read(bytes.NewReader(b.Bytes()), "s", lim, InScope)
	if err == nil {
		t.Fatal("a truncated entry was read without an error")
	}
}

// A stream of long names (a tar name or link target may be a MiB each) is
// refused past the names' cap, not held in memory whole.
func TestReadCapsTheBytesOfNames(t *testing.T) {
	long := strings.Repeat("n", 300)
	lim := Limits{Entries: 100, File: 1 << 10, Total: 1 << 20, Names: 1000}
	_, err := Read(stream(t, ent{name: "s/" + long + "1", typ: tar.TypeDir}, ent{name: "s/" + long + "2", typ: tar.TypeDir},
		ent{name: "s/" + long + "3", typ: tar.TypeDir}, ent{name: "s/" + long + "4", typ: tar.TypeDir}), "s", lim, nil)
	if !errors.Is(err, ErrTooMany) {
		t.Fatalf("long names: %v", err)
	}
	_, err = Read(stream(t, ent{name: "s/l1", typ: tar.TypeSymlink, link: long + long}, ent{name: "s/l2", typ: tar.TypeSymlink, link: long + long}), "s", lim, nil)
	if !errors.Is(err, ErrTooMany) {
		t.Fatalf("long link targets: %v", err)
	}
	if _, err := Read(stream(t, ent{name: "s/" + long, typ: tar.TypeDir}), "s", lim, nil); err != nil {
		t.Fatalf("within the cap: %v", err)
	}
	if DefaultLimits.Names <= 0 || DefaultLimits.Names > 128<<20 {
		t.Fatalf("DefaultLimits.Names %d", DefaultLimits.Names)
	}
}

func TestReadMarksANameGivenTwiceOdd(t *testing.T) {
	l, err := Read(stream(t,
		ent{name: "s/CLAUDE.md", typ: tar.TypeReg, data: "a"},
		ent{name: "s/./CLAUDE.md", typ: tar.TypeReg, data: "b"},
	), "s", DefaultLimits, InScope)
	if err != nil {
		t.Fatal(err)
	}
	if e := l.Entries["CLAUDE.md"]; e.Kind != Odd || e.Data != nil {
		t.Fatalf("%+v", e)
	}
}

func TestDiffFindsCreatedRemovedChanged(t *testing.T) {
	before, _ := Read(stream(t,
		ent{name: "s/CLAUDE.md", typ: tar.TypeReg, data: "a"},
		ent{name: "s/settings.json", typ: tar.TypeReg, data: "{}"},
		ent{name: "s/agents/x.md", typ: tar.TypeReg, data: "x"},
		ent{name: "s/projects/p/t.jsonl", typ: tar.TypeReg, data: "1\n"},
	), "s", DefaultLimits, InScope)
	after, _ := Read(stream(t,
		ent{name: "s/CLAUDE.md", typ: tar.TypeReg, data: "a"},
		ent{name: "s/settings.json", typ: tar.TypeReg, data: `{"permissions":{"allow":["Bash(*)"]}}`},
		ent{name: "s/skills/evil/SKILL.md", typ: tar.TypeReg, data: "evil"},
		ent{name: "s/projects/p/t.jsonl", typ: tar.TypeReg, data: "1\n2\n"},
	), "s", DefaultLimits, InScope)
	var got []string
	for _, c := range Diff(before, after, InScope) {
		got = append(got, c.Path)
	}
	if s := strings.Join(got, " "); s != "agents/x.md settings.json skills/evil/SKILL.md" {
		t.Fatalf("user scope diff: %s", s)
	}
	got = nil
	for _, c := range Diff(before, after, IsTranscript) {
		got = append(got, c.Path)
	}
	if s := strings.Join(got, " "); s != "projects/p/t.jsonl" {
		t.Fatalf("transcript diff: %s", s)
	}
}

func TestWriteRoundTripsAndRefusesBadPaths(t *testing.T) {
	es := []*Entry{
		{Path: "skills/a/SKILL.md", Kind: File, Data: []byte("a"), Size: 1},
		{Path: "CLAUDE.md", Kind: File, Data: []byte("be kind\n"), Size: 8},
		{Path: "agents", Kind: Dir},
	}
	var b bytes.Buffer
	if err := Write(&b, "state", es); err != nil {
		t.Fatal(err)
	}
	l, err := Read(&b, "state", DefaultLimits, InScope)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(l.Paths(), " "); got != "CLAUDE.md agents skills skills/a skills/a/SKILL.md" {
		t.Fatalf("paths: %s", got)
	}
	if string(l.Entries["CLAUDE.md"].Data) != "be kind\n" {
		t.Fatal("content lost")
	}
	for _, bad := range []string{"../x", "/x", "a/../../x", "a//b", "."} {
		if err := Write(&bytes.Buffer{}, "", []*Entry{{Path: bad, Kind: File, Data: []byte("x")}}); err == nil {
			t.Errorf("%q written", bad)
		}
	}
	if err := Write(&bytes.Buffer{}, "", []*Entry{{Path: "l", Kind: Odd, Why: "a symbolic link"}}); err == nil {
		t.Error("an odd entry written")
	}
}

func FuzzRead(f *testing.F) {
	var b bytes.Buffer
	_ = Write(&b, "s", []*Entry{{Path: "CLAUDE.md", Kind: File, Data: []byte("x"), Size: 1}})
	f.Add(b.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		l, _ := Read(bytes.NewReader(data), "s", Limits{Entries: 100, File: 1 << 16, Total: 1 << 20, Names: 1 << 20}, InScope)
		for p := range l.Entries {
			if c, err := Clean(p, ""); err != nil || c != p || p == "." {
				t.Fatalf("entry %q is not a plain relative path", p)
			}
		}
	})
}

func TestLinksCompareByTargetAndRoundTrip(t *testing.T) {
	a, _ := Read(stream(t, ent{name: "s/skills/x", typ: tar.TypeSymlink, link: "/home/dev/hobbs/skills/x"}), "s", DefaultLimits, nil)
	b, _ := Read(stream(t, ent{name: "s/skills/x", typ: tar.TypeSymlink, link: "/tmp/evil"}), "s", DefaultLimits, nil)
	if d := Diff(a, a, nil); len(d) != 0 {
		t.Fatalf("the same link differs: %+v", d)
	}
	if d := Diff(a, b, nil); len(d) != 1 {
		t.Fatalf("a retargeted link is no change: %+v", d)
	}
	var buf bytes.Buffer
	if err := Write(&buf, "", []*Entry{a.Entries["skills/x"]}); err != nil {
		t.Fatal(err)
	}
	c, err := Read(&buf, "", DefaultLimits, nil)
	if err != nil || c.Entries["skills/x"].Target != "/home/dev/hobbs/skills/x" {
		t.Fatalf("round trip: %v %+v", err, c.Entries)
	}
}

// Claude Code's state file changes at every start: it differs only where
// what a later session loads from it (MCP servers, allowed tools) differs.
func TestClaudeStateComparesWhatIsLoaded(t *testing.T) {
	entry := func(s string) *Entry {
		return &Entry{Path: ClaudeState, Kind: File, Size: int64(len(s)), Hash: fmt.Sprint(len(s), s), Data: []byte(s)}
	}
	base := `{"numStartups":1,"tipsHistory":{"a":1},"mcpServers":{"m":{"command":"x"}},"projects":{"/w":{"allowedTools":[],"lastCost":0.1}}}`
	diff := func(after string) bool {
		b := &Listing{Entries: map[string]*Entry{ClaudeState: entry(base)}}
		a := &Listing{Entries: map[string]*Entry{ClaudeState: entry(after)}}
		return len(Diff(b, a, nil)) > 0
	}
	if diff(`{"numStartups":2,"tipsHistory":{"a":2},"mcpServers":{"m":{"command":"x"}},"projects":{"/w":{"allowedTools":[],"lastCost":0.7}},"oauthAccount":{"x":1}}`) {
		t.Error("counters, costs and a sign-in count as a change")
	}
	for _, after := range []string{
		`{"numStartups":2,"mcpServers":{"m":{"command":"x"},"evil":{"command":"curl"}},"projects":{"/w":{"allowedTools":[]}}}`,
		`{"numStartups":2,"mcpServers":{"m":{"command":"x"}},"projects":{"/w":{"allowedTools":["Bash(*)"]}}}`,
		`{"numStartups":2,"mcpServers":{"m":{"command":"x"}},"projects":{"/w":{"allowedTools":[]},"/x":{"mcpServers":{"e":{}}}}}`,
		`{"numStartups":2,"mcpServers":{"m":{"command":"x"}},"projects":{"/w":{"enableAllProjectMcpServers":true}}}`,
		`not json`,
	} {
		if !diff(after) {
			t.Errorf("not a change: %s", after)
		}
	}
}

// A transcript rewritten to the same size (a conversation's text swapped
// for another of the same length) is a change: transcripts are hashed as
// they pass, never kept. Other files listed by size are neither.
func TestTranscriptRewrittenSameSizeIsAChange(t *testing.T) {
	read := func(transcript, cache string) *Listing {
		l, err := Read(stream(t,
			ent{name: "state/projects/-w/abc.jsonl", typ: tar.TypeReg, data: transcript},
			ent{name: "state/cache/x", typ: tar.TypeReg, data: cache},
		), "state", DefaultLimits, InScope)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	before, after := read(`{"text":"hello"}`+"\n", "aaaa"), read(`{"text":"evil!"}`+"\n", "bbbb")
	e := after.Entries["projects/-w/abc.jsonl"]
	if e.Data != nil || len(e.Hash) != 64 {
		t.Fatalf("a transcript is hashed, not kept: %+v", e)
	}
	if c := after.Entries["cache/x"]; c.Hash != "" || c.Data != nil {
		t.Fatalf("a file listed by size is hashed or kept: %+v", c)
	}
	d := Diff(before, after, IsTranscript)
	if len(d) != 1 || d[0].Path != "projects/-w/abc.jsonl" {
		t.Fatalf("diff: %+v", d)
	}
	// A listing kept before transcripts were hashed compares by size.
	before.Entries["projects/-w/abc.jsonl"].Hash = ""
	if d := Diff(before, after, IsTranscript); len(d) != 0 {
		t.Fatalf("diff against an unhashed listing: %+v", d)
	}
}

// A script keeps its owner's execute bit through a read and a write, and
// nothing else of its mode (setuid, group and others' bits); a file made
// runnable, or no longer, is a change.
func TestExecBitReadWrittenAndCompared(t *testing.T) {
	skill := func(script, doc int64) *Listing {
		l, err := Read(stream(t,
			ent{name: "skills/x/run.sh", typ: tar.TypeReg, data: "#!/bin/sh\n", mode: script},
			ent{name: "skills/x/SKILL.md", typ: tar.TypeReg, data: "---\nname: x\n---\n", mode: doc},
		), "", DefaultLimits, InScope)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	l := skill(0o4777, 0o666)
	if !l.Entries["skills/x/run.sh"].Exec || l.Entries["skills/x/SKILL.md"].Exec {
		t.Fatalf("exec: %+v %+v", l.Entries["skills/x/run.sh"], l.Entries["skills/x/SKILL.md"])
	}
	var b bytes.Buffer
	if err := Write(&b, "", []*Entry{l.Entries["skills/x/run.sh"], l.Entries["skills/x/SKILL.md"]}); err != nil {
		t.Fatal(err)
	}
	written := b.Bytes()
	modes := map[string]int64{}
	tr := tar.NewReader(bytes.NewReader(written))
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		modes[h.Name] = h.Mode
	}
	if modes["skills/x/run.sh"] != 0o700 || modes["skills/x/SKILL.md"] != 0o600 {
		t.Errorf("written modes: %v", modes)
	}
	back, err := Read(bytes.NewReader(written), "", DefaultLimits, InScope)
	if err != nil || !back.Entries["skills/x/run.sh"].Exec {
		t.Fatalf("read back: %+v %v", back.Entries["skills/x/run.sh"], err)
	}
	if d := Diff(l, skill(0o644, 0o600), nil); len(d) != 1 || d[0].Path != "skills/x/run.sh" {
		t.Errorf("diff: %+v", d)
	}
}
