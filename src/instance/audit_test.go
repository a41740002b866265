package instance

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/hobbs-agent/hobbs/src/audit"
)

// auditLines reads in's audit log as entries.
func auditLines(t *testing.T, in Instance) []audit.Entry {
	t.Helper()
	b, err := os.ReadFile(in.AuditLog())
	if err != nil {
		t.Fatal(err)
	}
	var out []audit.Entry
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e audit.Entry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		out = append(out, e)
	}
	return out
}

// Init records every run (what it created, nothing the second time);
// RedoFoundation and FillTemplateFoundation record init.foundation.
func TestInitAndFoundationAreAudited(t *testing.T) {
	in := Instance{Root: t.TempDir()}
	log := audit.New(in.FS(), in.AuditLog())
	fill := func(cur []byte) ([]byte, error) { return fillSection(cur, "Core Values", "- Honesty"), nil }
	for range 2 {
		if _, err := Init(in, InitOptions{Templates: tpl, Audit: log}); err != nil {
			t.Fatal(err)
		}
	}
	if res, err := FillTemplateFoundation(in, fill, log); err != nil || res == nil || !res.Changed {
		t.Fatalf("template foundation: %+v %v", res, err)
	}
	// Now it holds the user's text: FillTemplateFoundation leaves it alone.
	if res, err := FillTemplateFoundation(in, fill, log); err != nil || res != nil {
		t.Fatalf("own foundation: %+v %v", res, err)
	}
	if _, err := RedoFoundation(in, fill, func() (bool, error) { return false, nil }, log); err == nil {
		t.Fatal("rewritten without a yes")
	}
	if res, err := RedoFoundation(in, func(cur []byte) ([]byte, error) { return append(cur, "\nMore.\n"...), nil },
		func() (bool, error) { return true, nil }, log); err != nil || res.Backup == "" {
		t.Fatalf("yes: %+v %v", res, err)
	}
	es := auditLines(t, in)
	var got []string
	for _, e := range es {
		got = append(got, e.Event+" "+e.Outcome)
	}
	want := "init ok|init ok|init.foundation ok|init.foundation error|init.foundation ok"
	if strings.Join(got, "|") != want {
		t.Fatalf("events %q, want %s", got, want)
	}
	if created, _ := es[0].Detail["created"].([]any); len(created) == 0 || es[0].Subject != in.Root {
		t.Errorf("first init: %+v", es[0])
	}
	if created, _ := es[1].Detail["created"].([]any); len(created) != 0 {
		t.Errorf("second init created %v", created)
	}
	if es[2].Detail["changed"] != true || es[2].Subject != in.Foundation() {
		t.Errorf("fill: %+v", es[2])
	}
	if b, _ := es[4].Detail["backup"].(string); !strings.HasPrefix(b, "foundation.md.") {
		t.Errorf("redo: %+v", es[4])
	}
}
