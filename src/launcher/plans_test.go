package launcher

import (
	"testing"

	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/plan"
	"github.com/hobbs-agent/hobbs/src/policy"
)

// The plans the launcher's tests carry out: a fixed host and policy
// (the plan package's golden tests pin what plans hold).

func goldenHost() plan.Host {
	return plan.Host{Instance: "/home/ada/.local/share/hobbs", UID: 1000, GID: 1000, Workspace: "/home/ada/hobbs-workspace",
		Shares: instance.AgentShares(), Vault: true, RunVolume: "work-run-0a1b2c3d"}
}

func goldenPolicy(t *testing.T, instancePolicy string) *policy.Policy {
	t.Helper()
	def, err := policy.Parse("/etc/hobbs/policy.yaml", []byte("services: [claude, github]\n"))
	if err != nil {
		t.Fatal(err)
	}
	in, err := policy.Parse("policy.yaml", []byte(instancePolicy))
	if err != nil {
		t.Fatal(err)
	}
	return policy.Merge(def, in)
}
