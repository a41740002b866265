package playbook

import (
	"context"
	"fmt"

	"github.com/hobbs-agent/hobbs/src/doctor"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/style"
)

// Doctor is doctor's playbooks check: it warns about playbooks that fail lint
// and reports how many are due for review. Problems in playbooks never fail
// the doctor: they are the user's documents, not the system's health.
func Doctor(_ context.Context, env *doctor.Env) []doctor.Result {
	s := &Store{Dir: env.Instance.Playbooks(), Root: env.Instance.FS()} // DefaultReviewEvery without a valid config
	if env.Config != nil {
		s.ReviewEvery = env.Config.Playbooks.ReviewEveryDays
	}
	problems, n, err := s.Lint()
	if err != nil {
		return []doctor.Result{{Status: doctor.Warn, Message: err.Error()}}
	}
	if len(problems) > 0 {
		return []doctor.Result{{Status: doctor.Warn,
			Message: fmt.Sprintf("%s in %s, first: %s", style.N(len(problems), "problem", "problems"), style.N(n, "playbook", "playbooks"), problems[0]),
			Advice:  errs.NewAdvice(LintProblems)}}
	}
	entries, _, _ := s.List()
	due := 0
	for _, e := range entries {
		if e.Due {
			due++
		}
	}
	return []doctor.Result{{Status: doctor.OK, Message: fmt.Sprintf("%s, %d due for review", style.N(n, "playbook", "playbooks"), due)}}
}
