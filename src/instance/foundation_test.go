package instance

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFoundationTemplateOnly(t *testing.T) {
	for _, c := range []struct {
		name, doc string
		want      bool
	}{
		{"template", "# Foundation\n\nIntro.\n\n## Core Values\n\n<!-- Example:\n- Honesty -->\n\n## Goals\n\n<!-- x -->\n", true},
		{"blank", "  \n", true},
		{"filled", "# Foundation\n\n## Core Values\n\n- Honesty\n\n## Goals\n\n<!-- x -->\n", false},
		{"text beside a comment", "## Core Values\n<!-- x --> mine\n", false},
		{"unclosed comment", "## Core Values\n<!-- never closed\n- Honesty\n", true},
		{"own form, no sections", "I value honesty.\n", false},
	} {
		if got := FoundationTemplateOnly([]byte(c.doc)); got != c.want {
			t.Errorf("%s: FoundationTemplateOnly = %v, want %v", c.name, got, c.want)
		}
	}
	data, err := os.ReadFile("../../templates/foundation.md")
	if err != nil {
		t.Fatal(err)
	}
	if !FoundationTemplateOnly(data) {
		t.Error("templates/foundation.md is not template-only")
	}
}

// An answer to a heading the user removed is appended, never dropped.
func TestFillSectionAppendsMissingHeading(t *testing.T) {
	got := string(fillSection([]byte("# Mine\n\nText.\n"), "Principles", "- Ask first"))
	if got != "# Mine\n\nText.\n\n## Principles\n\n- Ask first\n" {
		t.Errorf("fillSection = %q", got)
	}
}

func redoInstance(t *testing.T, doc string) Instance {
	t.Helper()
	in := Instance{Root: t.TempDir()}
	if err := os.WriteFile(in.Foundation(), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return in
}

func backups(t *testing.T, in Instance) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(in.Root, "foundation.md.*.bak"))
	return m
}

// RedoFoundation: a template-only file is rewritten without asking; the
// user's own text only after a yes, and kept in a backup first; a no, an
// unchanged result or an unreadable file writes nothing.
func TestRedoFoundation(t *testing.T) {
	fill := func(cur []byte) ([]byte, error) { return fillSection(cur, "Core Values", "- Honesty"), nil }
	never := func() (bool, error) { t.Fatal("confirm asked for a template-only foundation"); return false, nil }

	in := redoInstance(t, "## Core Values\n\n<!-- x -->\n")
	res, err := RedoFoundation(in, fill, never, nil)
	if err != nil || !res.Changed || res.Backup != "" {
		t.Fatalf("template-only: %+v, %v", res, err)
	}
	if len(backups(t, in)) != 0 {
		t.Error("template-only: a backup was made")
	}

	own := "## Core Values\n\n- Mine\n\n## Goals\n\n- Keep me\n"
	in = redoInstance(t, own)
	_, err = RedoFoundation(in, func([]byte) ([]byte, error) { t.Fatal("interview after a no"); return nil, nil },
		func() (bool, error) { return false, nil }, nil)
	if err == nil || !strings.Contains(err.Error(), "not changed") {
		t.Fatalf("no: err = %v", err)
	}
	if b, _ := os.ReadFile(in.Foundation()); string(b) != own || len(backups(t, in)) != 0 {
		t.Fatalf("no: file %q, backups %v", b, backups(t, in))
	}

	res, err = RedoFoundation(in, fill, func() (bool, error) { return true, nil }, nil)
	if err != nil || !res.Changed || res.Backup == "" {
		t.Fatalf("yes: %+v, %v", res, err)
	}
	if b, _ := os.ReadFile(filepath.Join(in.Root, res.Backup)); string(b) != own {
		t.Errorf("backup holds %q, want the previous text", b)
	}
	b, _ := os.ReadFile(in.Foundation())
	if !strings.Contains(string(b), "- Honesty") || strings.Contains(string(b), "- Mine") || !strings.Contains(string(b), "- Keep me") {
		t.Errorf("rewritten foundation = %q", b)
	}

	in = redoInstance(t, own)
	res, err = RedoFoundation(in, func(cur []byte) ([]byte, error) { return cur, nil }, func() (bool, error) { return true, nil }, nil)
	if err != nil || res.Changed || len(backups(t, in)) != 0 {
		t.Errorf("unchanged answers: %+v, %v, backups %v", res, err, backups(t, in))
	}

	// A foundation.md that is a link is refused and left as it is.
	in = Instance{Root: t.TempDir()}
	target := filepath.Join(t.TempDir(), "elsewhere.md")
	os.WriteFile(target, []byte(own), 0o644)
	if err := os.Symlink(target, in.Foundation()); err != nil {
		t.Fatal(err)
	}
	if _, err := RedoFoundation(in, fill, func() (bool, error) { return true, nil }, nil); err == nil {
		t.Error("a linked foundation.md was rewritten")
	}
	if fi, err := os.Lstat(in.Foundation()); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link replaced: %v %v", fi, err)
	}
	if b, _ := os.ReadFile(target); string(b) != own {
		t.Errorf("link target changed: %q", b)
	}

	if _, err := RedoFoundation(Instance{Root: t.TempDir()}, fill, never, nil); err == nil {
		t.Errorf("missing foundation.md: err = %v", err)
	}
}
