// Package doctor holds what hobbs doctor's checks share: the Env they look
// at, the Result each yields, and Run, which runs a list of checks in the
// order given. The list itself, the report's order top to bottom, is the
// command's (cmd/hobbs/doctor.go); each check is an exported function of
// the package that owns what it checks: the instance and its config here
// (instance_checks.go), the policy in egress, memory, the vault, the
// engine, the launcher's engine.version, engine.init and image, playbooks,
// schedules.
//
// Each check yields results with a status (ok, warn, fail) and, for
// anything not ok, advice: the fix as data (a kind and its facts), which
// the command layer words. A failed check whose cause is a missing
// dependency (docker) sets Missing so the command can exit 3.
package doctor

import (
	"context"
	"fmt"

	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/style"
)

// Status of a check result.
type Status string

const (
	OK   Status = "ok"
	Warn Status = "warn"
	Fail Status = "fail"
)

// Result is one finding: its check's name (Run fills it), a status, a
// message, and for anything not ok the fix as advice.
type Result struct {
	Check   string
	Status  Status
	Message string
	Advice  errs.Advice
	Missing bool // a failure whose cause is a missing dependency
}

// Env is what checks look at.
type Env struct {
	Instance  instance.Instance
	Config    *config.Config // nil when the config is invalid
	ConfigErr error
	Deep      bool // run slow checks too (decrypt every vault entry…)
}

// Check is one check of the report: Name is its stable identifier, Run
// what it finds.
type Check struct {
	Name string
	Run  func(ctx context.Context, env *Env) []Result
}

// Run runs checks in the order given and returns their results in that
// order, each named after its check.
func Run(ctx context.Context, env *Env, checks []Check) []Result {
	var out []Result
	for _, c := range checks {
		for _, r := range c.Run(ctx, env) {
			if r.Check == "" {
				r.Check = c.Name
			}
			out = append(out, r)
		}
	}
	return out
}

// Summary counts results by status and reports whether every failure (at
// least one) is a missing dependency: doctor then exits 3 rather than 1.
func Summary(rs []Result) (ok, warn, fail int, onlyMissing bool) {
	onlyMissing = true
	for _, r := range rs {
		switch r.Status {
		case OK:
			ok++
		case Warn:
			warn++
		case Fail:
			fail++
			onlyMissing = onlyMissing && r.Missing
		}
	}
	return ok, warn, fail, onlyMissing && fail > 0
}

// Verdict is doctor's last line when nothing failed ("N ok, M warnings"),
// or its error: exit 3 when every failure is a missing dependency, 1
// otherwise.
func Verdict(rs []Result) (string, error) {
	ok, warn, fail, onlyMissing := Summary(rs)
	if fail == 0 {
		return fmt.Sprintf("%d ok, %s", ok, style.N(warn, "warning", "warnings")), nil
	}
	code := errs.Failure
	if onlyMissing {
		code = errs.Missing
	}
	return "", &errs.Error{Code: code, Msg: fmt.Sprintf("%s failed (%d ok, %s)", style.N(fail, "check", "checks"), ok, style.N(warn, "warning", "warnings"))}
}
