// Package doctor runs health checks over an instance and its host. Checks are
// registered by the packages that own what they check (the instance layout
// here, vault keys in the vault package, the engine in the engine and
// launcher packages), so adding a subsystem adds its checks without touching
// the command.
//
// Each check yields results with a status (ok, warn, fail) and, for anything
// not ok, a one-line fix. A failed check whose cause is a missing dependency
// (docker) sets Missing so the command can exit 3.
package doctor

import (
	"context"
	"fmt"
	"io"
	"sort"
	"sync"

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

// Result is one finding.
type Result struct {
	Check   string `json:"check"`
	Status  Status `json:"status"`
	Message string `json:"message"`
	Fix     string `json:"fix,omitempty"`
	Missing bool   `json:"missing_dependency,omitempty"`
	// Advice is the fix as data, for a check that has it from an error:
	// the command layer words it into Fix.
	Advice errs.Advice `json:"-"`
}

// Env is what checks look at.
type Env struct {
	Instance  instance.Instance
	Config    *config.Config // nil when the config is invalid
	ConfigErr error
	Deep      bool // run slow checks too (decrypt every vault entry…)
}

// Check is a registered check. Order sorts checks in the report (lower
// first); Name is its stable identifier.
type Check struct {
	Name  string
	Order int
	Run   func(ctx context.Context, env *Env) []Result
}

var (
	mu       sync.Mutex
	registry []Check
)

// Register adds a check. It is meant to be called from init functions.
func Register(c Check) {
	mu.Lock()
	defer mu.Unlock()
	registry = append(registry, c)
}

// Checks returns the registered checks in report order.
func Checks() []Check {
	mu.Lock()
	defer mu.Unlock()
	out := append([]Check(nil), registry...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Order != out[j].Order {
			return out[i].Order < out[j].Order
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Run runs every registered check in order.
func Run(ctx context.Context, env *Env) []Result {
	var out []Result
	for _, c := range Checks() {
		for _, r := range c.Run(ctx, env) {
			if r.Check == "" {
				r.Check = c.Name
			}
			out = append(out, r)
		}
	}
	return out
}

// WriteResults prints results for a reader, a line each: status (in its
// colour on a terminal), check and message in columns, and under anything
// not ok its fix.
func WriteResults(w io.Writer, rs []Result) error {
	for _, r := range rs {
		style.Fprint(w, map[Status]style.Kind{OK: style.OK, Warn: style.Warn, Fail: style.Fail}[r.Status], fmt.Sprintf("%-4s", r.Status))
		fmt.Fprintf(w, "  %-22s %s\n", r.Check, r.Message)
		if r.Fix != "" && r.Status != OK {
			fmt.Fprintf(w, "      %-22s fix: %s\n", "", r.Fix)
		}
	}
	return nil
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
