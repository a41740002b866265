package playbook

import (
	"strings"
	"testing"
)

func TestSelectAndCheckStage(t *testing.T) {
	es := []Entry{{Name: "a", Meta: Meta{Stage: "manual"}, Due: true}, {Name: "b", Meta: Meta{Stage: "autonomous"}},
		{Name: "c", Meta: Meta{Stage: "autonomous"}, Due: true}}
	names := func(es []Entry) string {
		var n []string
		for _, e := range es {
			n = append(n, e.Name)
		}
		return strings.Join(n, ",")
	}
	for _, c := range []struct {
		due   bool
		stage string
		want  string
	}{{false, "", "a,b,c"}, {true, "", "a,c"}, {false, "autonomous", "b,c"}, {true, "autonomous", "c"}, {true, "supervised", ""}} {
		got := Select(es, c.due, c.stage)
		if got == nil || names(got) != c.want {
			t.Errorf("Select(due %v, %q) = %q, want %q", c.due, c.stage, names(got), c.want)
		}
	}
	if err := CheckStage("supervised"); err != nil {
		t.Error(err)
	}
	if err := CheckStage("done"); err == nil || !strings.Contains(err.Error(), `unknown stage "done"`) {
		t.Errorf("unknown stage: %v", err)
	}
}
