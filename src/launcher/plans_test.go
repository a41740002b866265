package launcher

import (
	"testing"

	"github.com/hobbs-agent/hobbs/src/egress"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/plan"
)

// The plans the launcher's tests carry out: a fixed host and policy
// (the plan package's golden tests pin what plans hold).

func goldenHost() plan.Host {
	return plan.Host{Instance: "/home/ada/.local/share/hobbs", UID: 1000, GID: 1000, Workspace: "/home/ada/hobbs-workspace",
		Shares: instance.AgentShares(), Vault: true, RunVolume: "work-run-0a1b2c3d"}
}

func goldenPolicy(t *testing.T, instancePolicy string) *egress.Policy {
	t.Helper()
	def, err := egress.Parse("/etc/hobbs/policy.yaml", []byte("services: [claude, github]\n"))
	if err != nil {
		t.Fatal(err)
	}
	in, err := egress.Parse("policy.yaml", []byte(instancePolicy))
	if err != nil {
		t.Fatal(err)
	}
	return egress.Merge(def, in)
}
