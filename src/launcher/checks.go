package launcher

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hobbs-agent/hobbs/src/doctor"
	"github.com/hobbs-agent/hobbs/src/engine"
)

func init() {
	doctor.Register(doctor.Check{Name: "engine.version", Order: 51, Run: checkVersion})
	doctor.Register(doctor.Check{Name: "engine.network", Order: 52, Run: checkNetwork})
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

// checkNetwork (--deep) starts a throw-away container of the Hobbs image on
// an internal network and checks that an outside name does not resolve
// there: the agent's DNS must lead nowhere.
func checkNetwork(ctx context.Context, env *doctor.Env) []doctor.Result {
	if !env.Deep {
		return nil
	}
	e := engineOf(env)
	if _, err := e.ServerVersion(ctx); err != nil {
		return nil
	}
	img := DefaultTag
	if env.Config != nil && env.Config.Image != "" {
		img = env.Config.Image
	}
	if _, ok, err := imageLabel(ctx, e, img, LabelInputs); err != nil || !ok {
		return []doctor.Result{{Status: doctor.Warn, Message: "internal-network DNS not checked: no image " + img, Fix: "run: hobbs build"}}
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	name := "hobbs-doctor-" + randHex(3)
	lbl := []string{"--label", LabelSession + "=" + name, "--label", LabelRole + "=doctor"}
	if _, err := e.Output(ctx, append(append([]string{"network", "create", "--internal"}, lbl...), name)...); err != nil {
		return []doctor.Result{{Status: doctor.Fail, Message: "cannot create an internal network: " + firstLine(err.Error()),
			Fix: "check the engine supports --internal networks"}}
	}
	defer func() { _, _ = e.Output(context.Background(), "network", "rm", name) }()
	script := "if command -v getent >/dev/null 2>&1; then getent hosts example.com; else nslookup example.com; fi"
	out, err := e.Output(ctx, append(append([]string{"run", "--rm", "--network", name, "--cap-drop", "ALL", "--user", "65534:65534"}, lbl...),
		"--entrypoint", "sh", img, "-c", script)...)
	if err == nil {
		return []doctor.Result{{Status: doctor.Fail, Message: "an outside name resolves on an internal network: " + firstLine(out),
			Fix: "the engine's DNS forwards from internal networks; the proxy still guards traffic, but report your engine and version"}}
	}
	return []doctor.Result{{Status: doctor.OK, Message: "internal network: outside names do not resolve"}}
}
