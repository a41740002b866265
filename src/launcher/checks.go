package launcher

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/hobbs-agent/hobbs/src/doctor"
	"github.com/hobbs-agent/hobbs/src/engine"
)

func init() {
	doctor.Register(doctor.Check{Name: "engine.version", Order: 51, Run: checkVersion})
}

func engineOf(env *doctor.Env) engine.CLI {
	if env.Config != nil {
		return engine.New(env.Config.Engine)
	}
	return engine.New("")
}

// MinDocker is the oldest Docker Engine hobbs is tested on.
const MinDocker = "20.10"

// checkVersion warns about engines older than what hobbs is tested on.
func checkVersion(ctx context.Context, env *doctor.Env) []doctor.Result {
	e := engineOf(env)
	v, err := e.ServerVersion(ctx)
	if err != nil {
		return nil // the engine check reports it
	}
	if e.IsPodman() {
		if versionLess(v, "4.0") {
			return []doctor.Result{{Status: doctor.Warn, Message: "podman " + v + " is older than 4.0", Fix: "upgrade podman"}}
		}
		return []doctor.Result{{Status: doctor.OK, Message: "podman " + v}}
	}
	if versionLess(v, MinDocker) {
		return []doctor.Result{{Status: doctor.Warn, Message: fmt.Sprintf("Docker Engine %s is older than %s", v, MinDocker),
			Fix: "upgrade Docker Engine (https://docs.docker.com/engine/install/)"}}
	}
	return []doctor.Result{{Status: doctor.OK, Message: "Docker Engine " + v + " (>= " + MinDocker + ")"}}
}

// versionLess compares dotted numeric prefixes: "20.10.24+dfsg1" < "23.0".
func versionLess(a, b string) bool {
	pa, pb := versionParts(a), versionParts(b)
	for i := 0; i < len(pb); i++ {
		x := 0
		if i < len(pa) {
			x = pa[i]
		}
		if x != pb[i] {
			return x < pb[i]
		}
	}
	return false
}

func versionParts(v string) []int {
	var out []int
	for _, f := range strings.Split(v, ".") {
		n := 0
		for _, c := range f {
			if c < '0' || c > '9' {
				break
			}
			n = n*10 + int(c-'0')
		}
		out = append(out, n)
		if _, err := strconv.Atoi(f); err != nil {
			break
		}
	}
	return out
}
