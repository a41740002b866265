package vault

import (
	"context"
	"strings"
	"testing"

	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/doctor"
)

// TestDoctorMapped: every variable whose entry is missing fails, naming both;
// an entry vault rm kept in vault/removed is pointed at; no mapping, no result.
func TestDoctorMapped(t *testing.T) {
	v := newTestVault(t)
	mustSet(t, v, "present", "x")
	mustSet(t, v, "gone", "x")
	if _, err := v.Remove("gone", false); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse("config.yaml", []byte("env:\n  A: vault:present\n  B: vault:gone\n  C: vault:never\n"))
	if err != nil {
		t.Fatal(err)
	}
	rs := DoctorMapped(context.Background(), &doctor.Env{Instance: v.In, Config: cfg})
	if len(rs) != 2 {
		t.Fatalf("results = %+v, want two failures", rs)
	}
	for i, want := range []string{"B to vault:gone", "C to vault:never"} {
		if rs[i].Status != doctor.Fail || !strings.Contains(rs[i].Message, want) {
			t.Errorf("result %d = %+v, want a failure naming %q", i, rs[i], want)
		}
	}
	if rs[0].Advice.Kind != MappedRemoved || rs[1].Advice.Kind != MappedMissing || rs[1].Advice.Facts["entry"] != "never" {
		t.Errorf("only gone's fix should point at vault/removed: %+v / %+v", rs[0].Advice, rs[1].Advice)
	}

	if rs := DoctorMapped(context.Background(), &doctor.Env{Instance: v.In, Config: config.Default()}); len(rs) != 0 {
		t.Errorf("no mapping: %+v, want no result", rs)
	}
	if rs := DoctorMapped(context.Background(), &doctor.Env{Instance: v.In}); len(rs) != 0 {
		t.Errorf("invalid config: %+v, want no result (config's check reports it)", rs)
	}
}
