package memory

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

const seedFile = `---
id: mem_20250115_001
tags: [preferences, editor]
created: 2025-01-15
last_accessed: 2025-02-01T10:00:00Z
reinforced: 2
source: conversation
supersedes: null
status: active
---

The user prefers Helix.
`

func TestParseSeedFormat(t *testing.T) {
	m, err := Parse([]byte(seedFile), Active)
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != "mem_20250115_001" || m.Reinforced != 2 || m.Source != "conversation" || m.Status != StatusActive ||
		len(m.Tags) != 2 || m.Tags[1] != "editor" || len(m.Supersedes) != 0 ||
		!m.Created.Equal(time.Date(2025, 1, 15, 0, 0, 0, 0, time.UTC)) ||
		!m.LastAccessed.Equal(time.Date(2025, 2, 1, 10, 0, 0, 0, time.UTC)) || m.Body != "The user prefers Helix.\n" {
		t.Fatalf("parsed %+v", m)
	}
}

func TestMarshalUnchangedKeepsFile(t *testing.T) {
	m, err := Parse([]byte(seedFile), Active)
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != seedFile {
		t.Fatalf("rewrite without change altered the file:\n%s", out)
	}
}

func TestStatusDefaultsToTier(t *testing.T) {
	m, err := Parse([]byte("---\nid: a1\n---\nx\n"), Archive)
	if err != nil || m.Status != StatusArchived {
		t.Fatal(m, err)
	}
}

func TestParseProblems(t *testing.T) {
	for _, c := range []struct {
		in   string
		line int
		want string
	}{
		{"hello", 1, "no frontmatter"},
		{"---\nid: x\n", 1, "frontmatter is not closed"},
		{"---\ntags: [a]\n---\n", 1, "missing id"},
		{"---\nid: x\nreinforced: many\n---\n", 3, "reinforced: want a whole number"},
		{"---\nid: x\nreinforced: -1\n---\n", 3, "reinforced: want a whole number"},
		{"---\nid: x\ncreated: yesterday\n---\n", 3, "created: want a date"},
		{"---\nid: x\nstatus: gone\n---\n", 3, `unknown status "gone"`},
		{"---\nid: x y\n---\n", 2, "invalid id"},
		{"---\nid: ../x\n---\n", 2, "invalid id"},
		{"---\nid: x\nid: y\n---\n", 3, `duplicate key "id"`},
		{"---\n- a\n- b\n---\n", 2, "not a mapping"},
		{"---\nid: [a, b]\n---\n", 2, "want a single value"},
		{"---\nid: x\ntags: {a: b}\n---\n", 3, "want a list"},
		{"---\nid: &a x\nsource: *a\n---\n", 3, "aliases"},
	} {
		_, err := Parse([]byte(c.in), Active)
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Line != c.line || !strings.Contains(pe.Reason, c.want) {
			t.Errorf("%q: got %v, want line %d %q", c.in, err, c.line, c.want)
		}
	}
}

func TestNormalizeAndSimilarity(t *testing.T) {
	if a, b := Normalize("  The USER prefers, short answers!! "), Normalize("the user prefers short answers"); a != b {
		t.Fatalf("%q != %q", a, b)
	}
	if Normalize("...") != "" {
		t.Fatal("punctuation only must normalise to empty")
	}
	if s := Similarity("the user prefers short answers", "The user prefers short answers in French"); s < 0.7 || s > 0.72 {
		t.Fatalf("similarity %v", s)
	}
	if Similarity("a b", "c d") != 0 || Similarity("a b", "B, a.") != 1 {
		t.Fatal("jaccard bounds")
	}
}

func TestScoreOrdersByReinforcementRecencyAccess(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	old := now.AddDate(-1, 0, 0)
	if !(Score(4, old, time.Time{}, time.Time{}, now) > Score(0, old, time.Time{}, time.Time{}, now)) {
		t.Fatal("reinforcement must raise the score")
	}
	if !(Score(0, now, time.Time{}, time.Time{}, now) > Score(0, old, time.Time{}, time.Time{}, now)) {
		t.Fatal("recency must raise the score")
	}
	if !(Score(0, old, time.Time{}, now, now) > Score(0, old, time.Time{}, time.Time{}, now)) {
		t.Fatal("access must raise the score")
	}
}

func TestFoldMatchesRE2CaseInsensitivity(t *testing.T) {
	for _, pair := range [][2]string{{"k", "\u212a"}, {"s", "ſ"}, {"ß", "ẞ"}, {"Σ", "ς"}, {"é", "É"}} {
		if string(fold(nil, []byte(pair[0]))) != string(fold(nil, []byte(pair[1]))) {
			t.Errorf("%q and %q should fold alike", pair[0], pair[1])
		}
	}
	if string(fold(nil, []byte("a\xffb"))) != "A\xffB" {
		t.Error("invalid UTF-8 must be kept")
	}
}

// FuzzParse: Parse never panics, and what it accepts survives a rewrite.
func FuzzParse(f *testing.F) {
	f.Add([]byte(seedFile))
	f.Add([]byte("---\nid: x\n---\n"))
	f.Add([]byte("---\nid: x\ntags: a, b\nsupersedes: [y, z]\n# c\nextra: {k: v}\n---\nbody\n"))
	f.Add([]byte("---\r\nid: x\r\n---\r\nbody"))
	f.Add([]byte("---\nid: [\n---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data, Active)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error of the wrong type: %v", err)
			}
			return
		}
		out, err := m.Marshal()
		if err != nil {
			return // a node tree yaml.v3 cannot re-encode; never written
		}
		m2, err := Parse(out, Active)
		if err != nil {
			t.Fatalf("rewrite does not parse: %v\n%q\n->\n%q", err, data, out)
		}
		if m2.ID != m.ID || m2.Status != m.Status || m2.Reinforced != m.Reinforced || !equalStrings(m2.Tags, m.Tags) ||
			!m2.Created.Equal(m.Created) || strings.TrimSpace(m2.Body) != strings.TrimSpace(m.Body) {
			t.Fatalf("rewrite changed the memory:\n%+v\n%+v", m, m2)
		}
	})
}

// A hand-written file with a byte order mark, CRLF line ends and spaces after
// a delimiter loads (frontmatter.Block is the one definition of the block).
func TestParseBOMAndCRLF(t *testing.T) {
	m, err := Parse([]byte("\ufeff--- \r\nid: mem_20260101_001\r\ntags: [a]\r\n---\r\n\r\nhello\r\n"), Active)
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != "mem_20260101_001" || len(m.Tags) != 1 || m.Body != "hello\r\n" {
		t.Fatalf("%+v", m)
	}
}

// memory show --json and memory list --json agree on the shape of tags and
// unset times.
func TestMemoryJSONShape(t *testing.T) {
	m, err := Parse([]byte("---\nid: mem_20260101_001\ncreated: 2026-01-01\n---\n\nx\n"), Active)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if tags, ok := got["tags"].([]any); !ok || len(tags) != 0 {
		t.Errorf("tags = %#v, want []", got["tags"])
	}
	for _, k := range []string{"updated", "last_accessed"} {
		if v, ok := got[k]; !ok || v != nil {
			t.Errorf("%s = %#v, want null", k, v)
		}
	}
	if got["id"] != "mem_20260101_001" {
		t.Errorf("id = %v", got["id"])
	}
}

// Similarity is the Jaccard index of the normalised word sets of a and b:
// 1 for the same words, 0 for none in common.
func Similarity(a, b string) float64 { return jaccard(words(Normalize(a)), words(Normalize(b))) }
