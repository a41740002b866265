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
// read it, and plans from what it surveyed.
func TestPlanRunPreparesTheHost(t *testing.T) {
	in, _ := instance.At(t.TempDir())
	if err := os.WriteFile(in.Policy(), []byte("domains: [\"*\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(t.TempDir(), "new", "ws")
	spec := plan.RunSpec{Kind: plan.KindSession, Image: "i", Policy: &policy.Policy{}}
	_, err := PlanRun(in, config.Default(), false, ws, spec, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "egress policy is invalid") || !strings.Contains(err.Error(), "policy.yaml:1") {
		t.Fatalf("an invalid policy: %v", err)
	}
	if err := os.WriteFile(in.Policy(), []byte("domains: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := PlanRun(in, config.Default(), false, ws, spec, nil, nil)
	if err != nil {
		t.Fatal(err)
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
