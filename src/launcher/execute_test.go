package launcher

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/plan"
	"github.com/hobbs-agent/hobbs/src/policy"
)

// PlanRun makes a missing workspace, checks the policy as the proxy will
// read it (unless its caller did), and plans from what it surveyed.
func TestPlanRunPreparesTheHost(t *testing.T) {
	in, _ := instance.At(t.TempDir())
	if err := os.WriteFile(in.Policy(), []byte("domains: [\"*\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(t.TempDir(), "new", "ws")
	spec := plan.RunSpec{Kind: plan.KindSession, Image: "i"}
	loads := 0
	load := func() (*policy.Policy, error) { loads++; return &policy.Policy{}, nil }
	_, err := PlanRun(in, config.Default(), false, ws, spec, nil, load)
	if err == nil || !strings.Contains(err.Error(), "egress policy is invalid") || !strings.Contains(err.Error(), "policy.yaml:1") || loads != 0 {
		t.Fatalf("an invalid policy: %v (loaded %d times)", err, loads)
	}
	// A policy its caller checked (runner.Runner.Policy) is not checked
	// again: the run takes it as it is.
	checked := spec
	checked.Policy = &policy.Policy{}
	if _, err := PlanRun(in, config.Default(), false, ws, checked, nil, nil); err != nil {
		t.Fatalf("a policy checked by the caller: %v", err)
	}
	if _, err := PlanRun(in, config.Default(), false, ws, spec, nil, nil); err == nil {
		t.Fatal("a run planned with no policy and nothing to load it")
	}
	if err := os.WriteFile(in.Policy(), []byte("domains: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := PlanRun(in, config.Default(), false, ws, spec, nil, load)
	if err != nil || loads != 1 {
		t.Fatalf("%v (loaded %d times)", err, loads)
	}
	if fi, err := os.Stat(ws); err != nil || !fi.IsDir() {
		t.Errorf("the workspace was not made: %v", err)
	}
	if err := plan.ValidName(p.Session); err != nil || p.Workspace != ws || p.Agent.Mounts[3].Source != ws {
		t.Errorf("plan: session %q workspace %q mounts %+v", p.Session, p.Workspace, p.Agent.Mounts[:4])
	}
	if !hasAgentMount(p, plan.InstanceDir+"/memory") || hasAgentMount(p, plan.InstanceDir+"/foundation.md") {
		t.Errorf("the survey's shares: memory made and mounted, a missing foundation.md not: %+v", p.Agent.Mounts)
	}
}

// hasAgentMount reports whether p's agent mounts something at target.
func hasAgentMount(p *plan.Plan, target string) bool {
	for _, m := range p.Agent.Mounts {
		if m.Target == target {
			return true
		}
	}
	return false
}
