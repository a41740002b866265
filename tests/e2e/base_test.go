package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/hobbs-agent/hobbs/src/engine"
	"github.com/hobbs-agent/hobbs/src/errs"
	hobbsimage "github.com/hobbs-agent/hobbs/src/image"
)

// makeBase builds the test base image offline, the way hobbs build
// --base-from-debian makes a runtime base (hobbsimage.DebianDebs and
// hobbsimage.ImportRootFS): Debian's busybox-static (downloaded with apt,
// cached), with its applet links, /etc/passwd, the fake claude and
// netprobe, imported with `docker import`. The tag carries a hash of the
// inputs, so later runs reuse it.
func makeBase(netprobe string) (string, error) { return makeBaseWith(netprobe, true) }

// makeBaseWith is makeBase, with the FAKE claude or (withClaude false)
// without any: a base as hobbs build --base-from-debian makes offline.
func makeBaseWith(netprobe string, withClaude bool) (string, error) {
	cache, err := e2eCache()
	if err != nil {
		return "", err
	}
	get := func() ([]string, error) {
		return hobbsimage.DebianDebs(context.Background(), filepath.Join(cache, "debian"), []string{"busybox-static"}, io.Discard)
	}
	debs, err := get()
	if err != nil && os.Getuid() == 0 { // CI, on a machine whose package lists are empty
		if out, uerr := exec.Command("apt-get", "update", "-qq").CombinedOutput(); uerr != nil {
			return "", fmt.Errorf("apt-get update: %v\n%s", uerr, out)
		}
		debs, err = get()
	}
	if err != nil {
		return "", fmt.Errorf("busybox-static: %v (%s)", err, errs.AdviceOf(err).Kind)
	}
	if len(debs) != 1 {
		return "", fmt.Errorf("busybox-static comes as %d packages: %v", len(debs), debs)
	}
	deb := debs[0]
	fake, err := os.ReadFile("fake-claude.sh")
	if err != nil {
		return "", err
	}
	probe, err := os.ReadFile(netprobe)
	if err != nil {
		return "", err
	}
	debData, err := os.ReadFile(deb)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write(debData)
	h.Write(fake)
	h.Write(probe)
	h.Write([]byte(passwd + group + "v2"))
	if !withClaude {
		h.Write([]byte("no claude"))
	}
	tag := "hobbs-e2e-base:" + hex.EncodeToString(h.Sum(nil))[:16]
	if exec.Command("docker", "image", "inspect", tag).Run() == nil {
		return tag, nil
	}
	// The applets busybox has: it lists them itself.
	x, err := os.MkdirTemp("", "hobbs-e2e-deb-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(x)
	if out, err := exec.Command("dpkg-deb", "-x", deb, x).CombinedOutput(); err != nil {
		return "", fmt.Errorf("dpkg-deb -x: %v\n%s", err, out)
	}
	list, err := exec.Command(filepath.Join(x, "bin", "busybox"), "--list").Output()
	if err != nil {
		return "", fmt.Errorf("busybox --list: %v", err)
	}
	var files []hobbsimage.BaseFile
	for _, d := range []string{"etc", "home", "root", "usr/bin", "usr/local/bin", "run", "var", "proc", "sys", "dev"} {
		files = append(files, hobbsimage.BaseFile{Path: d, Dir: true, Mode: 0o755})
	}
	files = append(files, hobbsimage.BaseFile{Path: "tmp", Dir: true, Mode: 0o1777})
	applets := strings.Fields(string(list))
	sort.Strings(applets)
	for _, a := range applets {
		if a != "busybox" {
			files = append(files, hobbsimage.BaseFile{Path: "bin/" + a, Link: "busybox", Mode: 0o777})
		}
	}
	files = append(files,
		hobbsimage.BaseFile{Path: "etc/passwd", Mode: 0o644, Data: []byte(passwd)},
		hobbsimage.BaseFile{Path: "etc/group", Mode: 0o644, Data: []byte(group)},
		hobbsimage.BaseFile{Path: "usr/local/bin/netprobe", Mode: 0o755, Data: probe})
	if withClaude {
		files = append(files, hobbsimage.BaseFile{Path: "usr/local/bin/claude", Mode: 0o755, Data: fake})
	}
	err = hobbsimage.ImportRootFS(context.Background(), engine.New("docker"), tag, []string{deb}, files,
		[]string{"ENV PATH=/usr/local/bin:/usr/bin:/bin"})
	if err != nil {
		return "", fmt.Errorf("import the base: %v", err)
	}
	return tag, nil
}

const passwd = "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"
const group = "root:x:0:\nnogroup:x:65534:\n"

// e2eCache is where the suite keeps what it downloads between runs:
// $HOBBS_E2E_CACHE, else hobbs-e2e in the user's cache directory.
func e2eCache() (string, error) {
	cache := os.Getenv("HOBBS_E2E_CACHE")
	if cache == "" {
		c, err := os.UserCacheDir()
		if err != nil {
			c = os.TempDir()
		}
		cache = filepath.Join(c, "hobbs-e2e")
	}
	return cache, os.MkdirAll(cache, 0o755)
}

// TestBaseFromDebian: hobbs build --base-from-debian, run as the test user
// (no root), makes a runtime base from this machine's Debian packages; the
// Hobbs layer builds on it and a session runs its tools: node, git, gh,
// rg, jq, sqlite3, tini, curl with the CA bundle. Claude Code is not in it,
// and the command says so. The packages are kept between runs in a cache
// directory of the test user's in TMPDIR (the suite's cache may be in
// root's home, which the test user cannot enter).
func TestBaseFromDebian(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.removeVolume(t)
	xdgCache := filepath.Join(os.TempDir(), fmt.Sprintf("hobbs-e2e-cache-%d", testUID))
	mkdirs(t, xdgCache)
	base := "hobbs-e2e-" + runID + ":debian-base"
	img := "hobbs-e2e-" + runID + ":debian"
	t.Cleanup(func() { removeImages([]string{img, base}) })
	env := []string{"HOBBS_HOME=" + e.inst, "XDG_CACHE_HOME=" + xdgCache}

	r := hobbsAs(nil, e.home, env, "build", "--base-from-debian", "--base", base)
	t.Logf("hobbs build --base-from-debian: exit %d\n%s", r.code, r.stderr)
	if r.code != 0 || strings.TrimSpace(r.stdout) != base {
		t.Fatalf("hobbs build --base-from-debian: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "Claude Code is not in this base") || !regexp.MustCompile(`built runtime base \S+ from \d+ Debian packages`).MatchString(r.stderr) {
		t.Errorf("the build does not say what it made and that Claude Code is missing:\n%s", r.stderr)
	}
	labels := docker(t, "image", "inspect", "--format", "{{json .Config.Labels}}", base)
	if !strings.Contains(labels, `"dev.hobbs.role":"runtime"`) || !strings.Contains(labels, fmt.Sprintf(`"dev.hobbs.user":"%d"`, testUID)) {
		t.Errorf("the base's labels: %s", labels)
	}

	check := `set -e
node -e 'console.log("node", process.version)'
git --version
gh --version | head -n 1
rg --version | head -n 1
echo '{"a":1}' | jq -c .a
sqlite3 :memory: 'select 40+2'
tini --version
test -s /etc/ssl/certs/ca-certificates.crt && echo ca-bundle
command -v claude || echo no-claude`
	r = hobbsAs(nil, e.home, env, "run", "--image", img, "--base", base, "--workspace", e.ws, "--name", sessionName(t, "debian"), "--", "sh", "-c", check)
	if r.code != 0 {
		t.Fatalf("a session on the base: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"node v", "git version", "gh version", "ripgrep", "\n1\n", "42", "tini version", "ca-bundle", "no-claude"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the session's output lacks %q:\n%s", want, r.stdout)
		}
	}
}
