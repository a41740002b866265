package memory

import (
	"context"
	"fmt"

	"github.com/hobbs-agent/hobbs/src/doctor"
	"github.com/hobbs-agent/hobbs/src/style"
)

func init() {
	doctor.Register(doctor.Check{Name: "memory", Order: 40, Run: checkMemory})
	doctor.Register(doctor.Check{Name: "memory.context", Order: 41, Run: checkContext})
}

// checkContext measures foundation.md against the context budget and the
// hook limit. Over the hook limit fails: sessions then start with a note
// naming the file instead of the foundation itself, and the promise that the
// foundation is in every session's context rests on the model reading it.
// Over the budget warns: claude.md and memories get no room.
func checkContext(_ context.Context, env *doctor.Env) []doctor.Result {
	budget := DefaultBudget
	if env.Config != nil && env.Config.Memory.ContextBudget > 0 {
		budget = env.Config.Memory.ContextBudget
	}
	fit, err := (&Store{In: env.Instance}).FoundationFit(budget)
	switch {
	case err != nil:
		return []doctor.Result{{Status: doctor.Fail, Message: err.Error()}}
	case fit == nil:
		return nil // instance.layout reports a missing foundation.md
	case fit.OverHook:
		return []doctor.Result{{Status: doctor.Fail, Message: fit.Warning(),
			Fix: fmt.Sprintf("shorten %s to at most %d characters", fit.Path, fit.Chars-(fit.Needed-HookLimit))}}
	case fit.OverBudget:
		return []doctor.Result{{Status: doctor.Warn, Message: fit.Warning(),
			Fix: fmt.Sprintf("shorten %s, or raise memory.context_budget in config.yaml (at most %d)", fit.Path, HookLimit)}}
	}
	return []doctor.Result{{Status: doctor.OK, Message: fmt.Sprintf("foundation.md: %d characters, %d of the context budget of %d left for claude.md and memories",
		fit.Chars, budget-fit.Needed, budget)}}
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
		return []doctor.Result{{Status: doctor.Warn, Message: fmt.Sprintf("%s; %s cannot be used", msg, style.N(st.Problems, "file", "files")),
			Fix: "run: hobbs memory lint (then fix the files it names by hand)"}}
	}
	return []doctor.Result{{Status: doctor.OK, Message: msg}}
}
