package launcher

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hobbs-agent/hobbs/src/doctor"
	"github.com/hobbs-agent/hobbs/src/engine"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/image"
)

func engineOf(env *doctor.Env) engine.CLI {
	if env.Config != nil {
		return engine.New(env.Config.Engine)
	}
	return engine.New("")
}

// MinDocker is the oldest Docker Engine hobbs is tested on.
const MinDocker = "20.10"

// DoctorVersion is doctor's engine.version check: it warns about engines
// older than what hobbs is tested on.
func DoctorVersion(ctx context.Context, env *doctor.Env) []doctor.Result {
	e := engineOf(env)
	v, err := e.ServerVersion(ctx)
	if err != nil {
		return nil // the engine check reports it
	}
	if e.IsPodman() {
		if versionLess(v, "4.0") {
			return []doctor.Result{{Status: doctor.Warn, Message: "podman " + v + " is older than 4.0", Advice: errs.NewAdvice(PodmanOld)}}
		}
		return []doctor.Result{{Status: doctor.OK, Message: "podman " + v}}
	}
	if versionLess(v, MinDocker) {
		return []doctor.Result{{Status: doctor.Warn, Message: fmt.Sprintf("Docker Engine %s is older than %s", v, MinDocker),
			Advice: errs.NewAdvice(DockerOld)}}
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

// DoctorImage is doctor's image check: it reports whether hobbs run will find
// its image: the image it runs (config.yaml's image, else the default), or,
// for a local build, the runtime base it is built from, and an image whose
// build found no claude in its base (image.LabelClaude). With --deep it
// also looks for claude in the image (or in the base a build would use),
// starting a container: a session starts Claude Code.
func DoctorImage(ctx context.Context, env *doctor.Env) []doctor.Result {
	if os.Getenv("HOBBS_CONTEXT") == "container" || env.Config == nil {
		return nil // no engine in the agent's container; the config check reports a bad config
	}
	e := engineOf(env)
	if _, err := e.ServerVersion(ctx); err != nil {
		return nil // the engine check reports it
	}
	ref := image.ImageRef(env.Config.Image)
	ok, err := imagePresent(ctx, e, ref)
	if err != nil {
		return []doctor.Result{{Status: doctor.Warn, Message: firstLine(err.Error()), Advice: errs.AdviceOf(err)}}
	}
	var out []doctor.Result
	probe := ref
	switch {
	case ok:
		if has, known, _ := image.LabelledClaude(ctx, e, ref); known && !has {
			e := image.NoClaudeCode(ref)
			return []doctor.Result{{Status: doctor.Fail, Missing: true, Message: e.Msg, Advice: e.Advice}}
		}
		out = append(out, doctor.Result{Status: doctor.OK, Message: "image " + ref + " is here"})
	case image.IsRegistryRef(ref):
		return []doctor.Result{{Status: doctor.Warn, Message: "image " + ref + " is not here: hobbs run pulls it, which needs its registry",
			Advice: errs.NewAdvice(ImageNotPulled, "bin", e.Bin, "ref", ref)}}
	default:
		base := env.Config.BaseImage
		if ok, err := imagePresent(ctx, e, base); err != nil {
			return []doctor.Result{{Status: doctor.Warn, Message: firstLine(err.Error()), Advice: errs.AdviceOf(err)}}
		} else if !ok {
			return []doctor.Result{{Status: doctor.Fail, Missing: true,
				Message: fmt.Sprintf("image %s is not built and its runtime base %s is missing: hobbs run cannot build it", ref, base),
				Advice:  image.MissingBase(e, base).Advice}}
		}
		out = append(out, doctor.Result{Status: doctor.OK,
			Message: fmt.Sprintf("image %s is not built yet: hobbs run (or hobbs build) builds it from %s", ref, base)})
		probe = base
	}
	if env.Deep {
		out = append(out, checkClaude(ctx, e, probe))
	}
	return out
}

// imagePresent reports whether the engine has image ref; a missing image
// is false in docker's words and podman's (engine.IsNotFound).
func imagePresent(ctx context.Context, e engine.CLI, ref string) (bool, error) {
	_, err := e.Output(ctx, "image", "inspect", "--format", "{{.Id}}", ref)
	if err != nil && engine.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// checkClaude looks for claude in image ref (image.ClaudePath): a
// session's command is Claude Code.
func checkClaude(ctx context.Context, e engine.CLI, ref string) doctor.Result {
	p, err := image.ClaudePath(ctx, e, ref)
	switch {
	case err != nil:
		return doctor.Result{Status: doctor.Warn, Message: "could not look for claude: " + firstLine(err.Error()),
			Advice: errs.NewAdvice(ClaudeUnchecked, "bin", e.Bin, "image", ref)}
	case p == "":
		e := image.NoClaudeCode(ref)
		return doctor.Result{Status: doctor.Fail, Missing: true, Message: e.Msg, Advice: e.Advice}
	}
	return doctor.Result{Status: doctor.OK, Message: "claude in " + ref + ": " + p}
}

// initPaths are where podman looks for its init binary (catatonit) when
// containers.conf sets no init_path.
var initPaths = []string{"/usr/libexec/podman/catatonit", "/usr/local/libexec/podman/catatonit",
	"/usr/local/lib/podman/catatonit", "/usr/lib/podman/catatonit"}

// DoctorInit is doctor's engine.init check: every session starts its
// containers with --init, which podman runs with catatonit, packaged apart
// from podman (Debian: catatonit). Docker ships its own (docker-init). A
// remote podman's binary is on the server, out of reach here.
func DoctorInit(ctx context.Context, env *doctor.Env) []doctor.Result {
	e := engineOf(env)
	if os.Getenv("HOBBS_CONTEXT") == "container" || !e.IsPodman() || os.Getenv("CONTAINER_HOST") != "" {
		return nil
	}
	if remote, err := e.Output(ctx, "info", "--format", "{{.Host.ServiceIsRemote}}"); err != nil || remote == "true" {
		return nil // unreachable: the engine check says so
	}
	p, where := podmanInitPath(containersConfs())
	if p == "" {
		return []doctor.Result{{Status: doctor.Fail, Missing: true,
			Message: "podman has no init binary (catatonit) for the --init every session uses: looked in " + strings.Join(initPaths, ", "),
			Advice:  errs.NewAdvice(NoCatatonit)}}
	}
	if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return []doctor.Result{{Status: doctor.Fail, Missing: true,
			Message: fmt.Sprintf("podman's init binary %s (init_path in %s) is not an executable file", p, where),
			Advice:  errs.NewAdvice(BadInitPath, "where", where)}}
	}
	return []doctor.Result{{Status: doctor.OK, Message: "podman init binary: " + p}}
}

// containersConfs are the containers.conf files podman reads, in order
// (later ones win): CONTAINERS_CONF alone when set, else the system's and
// the user's.
func containersConfs() []string {
	if c := os.Getenv("CONTAINERS_CONF"); c != "" {
		return []string{c}
	}
	files := []string{"/usr/share/containers/containers.conf", "/etc/containers/containers.conf"}
	d, _ := filepath.Glob("/etc/containers/containers.conf.d/*.conf")
	files = append(files, d...)
	if os.Geteuid() != 0 {
		cfg := os.Getenv("XDG_CONFIG_HOME")
		if cfg == "" {
			if home, err := os.UserHomeDir(); err == nil {
				cfg = filepath.Join(home, ".config")
			}
		}
		if cfg != "" {
			files = append(files, filepath.Join(cfg, "containers", "containers.conf"))
			d, _ := filepath.Glob(filepath.Join(cfg, "containers", "containers.conf.d", "*.conf"))
			files = append(files, d...)
		}
	}
	return files
}

// podmanInitPath returns the init binary podman would use: the last
// init_path the files set (and the file that set it), else the first of
// initPaths that exists, else "".
func podmanInitPath(files []string) (path, where string) {
	for _, f := range files {
		if p := initPathIn(f); p != "" {
			path, where = p, f
		}
	}
	if path != "" {
		return path, where
	}
	for _, p := range initPaths {
		if _, err := os.Stat(p); err == nil {
			return p, ""
		}
	}
	return "", ""
}

// initPathIn reads init_path from the [containers] table of a
// containers.conf (TOML; only this one key is read).
func initPathIn(file string) string {
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	table, found := "", ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			table = strings.Trim(line, "[] ")
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || table != "containers" || strings.TrimSpace(k) != "init_path" {
			continue
		}
		found = tomlString(strings.TrimSpace(v))
	}
	return found
}

// tomlString is the value of a TOML string (basic or literal) at the start
// of v, a comment after it ignored.
func tomlString(v string) string {
	if v == "" {
		return ""
	}
	if q := v[0]; q == '"' || q == '\'' {
		if end := strings.IndexByte(v[1:], q); end >= 0 {
			return v[1 : 1+end]
		}
		return ""
	}
	v, _, _ = strings.Cut(v, "#")
	return strings.TrimSpace(v)
}
