package memory

import (
	"context"
	"fmt"
	"strconv"

	"github.com/hobbs-agent/hobbs/src/doctor"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/style"
)

// DoctorContext is doctor's memory.context check: it measures foundation.md
// against the context budget and the hook limit. Over the hook limit fails:
// sessions then start with a note naming the file instead of the foundation
// itself, and the promise that the foundation is in every session's context
// rests on the model reading it. Over the budget warns: claude.md and
// memories get no room.
func DoctorContext(_ context.Context, env *doctor.Env) []doctor.Result {
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
			Advice: errs.NewAdvice(FoundationOverHook, "path", fit.Path, "chars", strconv.Itoa(fit.Chars-(fit.Needed-HookLimit)))}}
	case fit.OverBudget:
		return []doctor.Result{{Status: doctor.Warn, Message: fit.Warning(),
			Advice: errs.NewAdvice(FoundationOverBudget, "path", fit.Path, "limit", strconv.Itoa(HookLimit))}}
	}
	return []doctor.Result{{Status: doctor.OK, Message: fmt.Sprintf("foundation.md: %d characters, %d of the context budget of %d left for claude.md and memories",
		fit.Chars, budget-fit.Needed, budget)}}
}

// Doctor is doctor's memory check: it counts the memories through the index
// and warns about files that do not parse or share an id.
func Doctor(_ context.Context, env *doctor.Env) []doctor.Result {
	if _, err := env.Instance.FS().Stat(env.Instance.MemoryDir()); err != nil {
		if unsafe(err) {
			return []doctor.Result{{Status: doctor.Fail, Message: err.Error()}}
		}
		return nil // instance.layout reports it
	}
	s := &Store{In: env.Instance}
	st, err := s.Stats()
	if err != nil {
		return []doctor.Result{{Status: doctor.Fail, Message: err.Error(), Advice: errs.NewAdvice(DirUnreadable, "path", env.Instance.MemoryDir())}}
	}
	msg := fmt.Sprintf("%d active, %d archived (%d superseded)", st.Tiers[Active], st.Tiers[Archive], st.Status[StatusSuperseded])
	if st.Problems > 0 {
		return []doctor.Result{{Status: doctor.Warn, Message: fmt.Sprintf("%s; %s cannot be used", msg, style.N(st.Problems, "file", "files")),
			Advice: errs.NewAdvice(UnusableFiles)}}
	}
	return []doctor.Result{{Status: doctor.OK, Message: msg}}
}
