package memory

import (
	"context"
	"fmt"

	"github.com/hobbs-agent/hobbs/src/doctor"
)

func init() {
	doctor.Register(doctor.Check{Name: "memory", Order: 40, Run: checkMemory})
}

// checkMemory counts the memories through the index and warns about files
// that do not parse or share an id.
func checkMemory(_ context.Context, env *doctor.Env) []doctor.Result {
	if _, err := env.Instance.FS().Stat(env.Instance.MemoryDir()); err != nil {
		if unsafe(err) {
			return []doctor.Result{{Status: doctor.Fail, Message: err.Error()}}
		}
		return nil // instance.layout reports it
	}
	s := &Store{In: env.Instance}
	st, err := s.Stats()
	if err != nil {
		return []doctor.Result{{Status: doctor.Fail, Message: err.Error(), Fix: "check the permissions of " + env.Instance.MemoryDir()}}
	}
	msg := fmt.Sprintf("%d active, %d archived (%d superseded)", st.Tiers[Active], st.Tiers[Archive], st.Status[StatusSuperseded])
	if st.Problems > 0 {
		return []doctor.Result{{Status: doctor.Warn, Message: fmt.Sprintf("%s; %d file(s) cannot be used", msg, st.Problems),
			Fix: "run: hobbs memory lint (then fix the files it names by hand)"}}
	}
	return []doctor.Result{{Status: doctor.OK, Message: msg}}
}
