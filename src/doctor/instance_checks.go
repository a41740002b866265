package doctor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hobbs-agent/hobbs/src/instance"
)

func init() {
	Register(Check{Name: "instance.layout", Order: 10, Run: checkLayout})
	Register(Check{Name: "instance.permissions", Order: 20, Run: checkPermissions})
	Register(Check{Name: "config", Order: 30, Run: checkConfig})
}

func checkLayout(_ context.Context, env *Env) []Result {
	var missing []string
	for _, e := range instance.Layout() {
		fi, err := os.Stat(env.Instance.Path(e))
		if err != nil || fi.IsDir() != e.Dir {
			missing = append(missing, e.Rel)
		}
	}
	if len(missing) > 0 {
		return []Result{{Status: Fail,
			Message: fmt.Sprintf("%s: missing %s", env.Instance.Root, strings.Join(missing, ", ")),
			Fix:     "run: hobbs init (creates only what is missing)"}}
	}
	return []Result{{Status: OK, Message: env.Instance.Root + ": layout complete"}}
}

func checkPermissions(_ context.Context, env *Env) []Result {
	var out []Result
	for _, e := range instance.Layout() {
		if !e.Strict {
			continue
		}
		p := env.Instance.Path(e)
		fi, err := os.Stat(p)
		if err != nil {
			continue // reported by the layout check
		}
		if perm := fi.Mode().Perm(); perm&^e.Mode != 0 {
			out = append(out, Result{Status: Fail,
				Message: fmt.Sprintf("%s is %04o, must be %04o", e.Rel, perm, e.Mode),
				Fix:     fmt.Sprintf("chmod %04o %s", e.Mode, p)})
		}
	}
	// Key material: every file under vault/keys must be private.
	keys := env.Instance.VaultKeys()
	ents, _ := os.ReadDir(keys)
	for _, d := range ents {
		p := filepath.Join(keys, d.Name())
		fi, err := os.Lstat(p)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			out = append(out, Result{Status: Fail,
				Message: fmt.Sprintf("vault/keys/%s is %04o, must be 0600", d.Name(), perm),
				Fix:     "chmod 0600 " + p})
		}
	}
	if len(out) == 0 {
		out = append(out, Result{Status: OK, Message: "vault/keys is 0700 and key files are private"})
	}
	return out
}

func checkConfig(_ context.Context, env *Env) []Result {
	if env.ConfigErr != nil {
		return []Result{{Status: Fail, Message: firstLine(env.ConfigErr.Error()),
			Fix: "run: hobbs config validate (lists every problem with its line)"}}
	}
	return []Result{{Status: OK, Message: env.Instance.Rel(env.Instance.Config()) + " is valid"}}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " (…)"
	}
	return s
}
