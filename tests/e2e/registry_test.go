package e2e

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"debug/macho"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/tooltest"
)

// registry is a real registry (Debian's docker-registry) on a loopback
// port, with its own configuration and storage. The engine pulls from
// 127.0.0.1 over plain HTTP (loopback registries are insecure-ok).
type registry struct {
	addr string // 127.0.0.1:PORT
	log  string // its log: one access line per request
	cmd  *exec.Cmd
}

func startRegistry(t *testing.T) *registry {
	t.Helper()
	bin := tooltest.Need(t, "docker-registry")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`version: 0.1
log:
  level: warn
  accesslog:
    disabled: false
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: %s
`, filepath.Join(dir, "storage"), addr)), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &registry{addr: addr, log: filepath.Join(dir, "registry.log")}
	logf, err := os.Create(r.log)
	if err != nil {
		t.Fatal(err)
	}
	r.cmd = exec.Command(bin, "serve", cfg)
	r.cmd.Stdout, r.cmd.Stderr = logf, logf
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.stop(); logf.Close() })
	waitFor(t, 10*time.Second, "the registry at "+addr, func() bool {
		resp, err := http.Get("http://" + addr + "/v2/")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return r
}

func (r *registry) stop() {
	if r.cmd.ProcessState == nil {
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
	}
}

// manifestRequests counts the requests for repo's manifests in the log so
// far: what a pull asks first.
func (r *registry) manifestRequests(t *testing.T, repo string) int {
	t.Helper()
	b, err := os.ReadFile(r.log)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "/v2/"+repo+"/manifests/")
}

// releaseBinary builds hobbs as a release of version whose images are
// published under repo (the link-time variables a release sets).
func releaseBinary(t *testing.T, version, repo string) string {
	t.Helper()
	bin := filepath.Join(tmpRoot, "hobbs-"+version)
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-X main.version="+version+" -X main.imageRepo="+repo, "-o", bin, "./cmd/hobbs")
	build.Dir = repoRoot
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", version, err, out)
	}
	return bin
}

// hobbsBinary runs bin (rather than the suite's binary) as the test user.
func (e *env) hobbsBinary(bin string, args ...string) (result, time.Duration) {
	e.t.Helper()
	c := e.command(nil, args...)
	c.Path, c.Args[0] = bin, bin
	var so, se strings.Builder
	c.Stdout, c.Stderr = &so, &se
	t0 := time.Now()
	err := c.Run()
	d := time.Since(t0)
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		code = -1
		se.WriteString(err.Error())
	}
	return result{code: code, stdout: so.String(), stderr: se.String()}, d
}

// TestPublishedImage is user mode on the real engine and a real registry:
// a release build (version and image repository set at link time) with no
// image, no base and no --image runs its published image. It pulls it when
// missing (once: the registry sees the manifest asked for by the first run
// only), starts the session, and runs from the local copy afterwards. An
// image whose version label is not the binary's is refused, naming which
// to update; without the registry (nothing listening, or a listener that
// never answers) the run fails within 5 s, exit 3, naming the ways out.
func TestPublishedImage(t *testing.T) {
	e := newEnv(t)
	e.removeVolume(t)
	reg := startRegistry(t)
	name := "hobbs-e2e-" + runID
	repo := reg.addr + "/" + name
	v1, v2 := "v0.0.1", "v0.0.2"
	ref1, ref2 := repo+":"+v1, repo+":"+v2
	t.Cleanup(func() { removeImages([]string{ref1, ref2}) })
	rel1 := releaseBinary(t, v1, repo)

	// hobbs version of a release build names the published image.
	r, _ := e.hobbsBinary(rel1, "version")
	if r.code != 0 || !strings.Contains(r.stdout, "hobbs "+v1+" ") || !strings.Contains(r.stdout, "image "+ref1+" (published)") {
		t.Fatalf("hobbs version of the release build: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// Publish: the release build makes its image (labelled with its
	// version) on the suite's base; it is pushed and removed here.
	r, _ = e.hobbsBinary(rel1, "build", "--base", baseImage)
	if r.code != 0 || strings.TrimSpace(r.stdout) != ref1 {
		t.Fatalf("hobbs build: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
	}
	if got := docker(t, "image", "inspect", "--format", `{{index .Config.Labels "dev.hobbs.version"}}`, ref1); got != v1 {
		t.Fatalf("image label dev.hobbs.version = %q, want %s", got, v1)
	}
	docker(t, "push", ref1)
	docker(t, "image", "rm", ref1)
	if imageID(ref1) != "" {
		t.Fatalf("%s still present after docker image rm", ref1)
	}
	before := reg.manifestRequests(t, name)

	run := func(bin, session string) (result, time.Duration) {
		return e.hobbsBinary(bin, "run", "--workspace", e.ws, "--name", sessionName(t, session), "--", "true")
	}
	r, d := run(rel1, "pub1")
	if r.code != 0 {
		t.Fatalf("first run: exit %d\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "pulling "+ref1) || imageID(ref1) == "" {
		t.Errorf("first run did not pull %s:\n%s", ref1, r.stderr)
	}
	pulled := reg.manifestRequests(t, name)
	if pulled == before {
		t.Errorf("the registry saw no manifest request from the first run")
	}
	t.Logf("first run (pull and session) in %v", d.Round(time.Millisecond))

	r, d = run(rel1, "pub2")
	if r.code != 0 {
		t.Fatalf("second run: exit %d\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "pulling") || reg.manifestRequests(t, name) != pulled {
		t.Errorf("second run pulled again (registry manifest requests %d, then %d):\n%s", pulled, reg.manifestRequests(t, name), r.stderr)
	}
	t.Logf("second run (image present) in %v", d.Round(time.Millisecond))
	if left := e.leftovers(t); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}

	// The published name of v0.0.2 holds the v0.0.1 image: a v0.0.2 build
	// pulls it and refuses it, saying the image is the one to update.
	docker(t, "tag", ref1, ref2)
	docker(t, "push", ref2)
	docker(t, "image", "rm", ref2)
	rel2 := releaseBinary(t, v2, repo)
	r, _ = run(rel2, "mismatch")
	if r.code != 1 || !strings.Contains(r.stderr, "image "+ref2+" is hobbs "+v1+", this hobbs is "+v2) ||
		!strings.Contains(r.stderr, "hobbs: hint: update the image") {
		t.Errorf("version mismatch: exit %d, want 1 naming both versions and the image to update:\n%s", r.code, r.stderr)
	}
	if left := e.leftovers(t); len(left) > 0 {
		t.Errorf("left behind after the refusal: %v", left)
	}

	// Without the registry: stopped (nothing listens), then a listener that
	// accepts and never answers.
	docker(t, "image", "rm", ref1)
	reg.stop()
	check := func(what string) {
		t.Helper()
		r, d := run(rel1, "offline")
		if r.code != 3 || !strings.Contains(r.stderr, "hobbs: registry "+reg.addr+" not reachable") {
			t.Errorf("%s: exit %d, want 3 naming the registry:\n%s", what, r.code, r.stderr)
		}
		for _, way := range []string{"hobbs build", "--image", "base_image"} {
			if !strings.Contains(r.stderr, way) {
				t.Errorf("%s: the hint does not name %s:\n%s", what, way, r.stderr)
			}
		}
		if d > 5*time.Second {
			t.Errorf("%s: took %v to fail, want at most 5s", what, d.Round(time.Millisecond))
		}
		if imageID(ref1) != "" {
			t.Errorf("%s: %s exists after a failed pull", what, ref1)
		}
		if left := e.leftovers(t); len(left) > 0 {
			t.Errorf("%s: left behind: %v", what, left)
		}
		t.Logf("%s: failed in %v", what, d.Round(time.Millisecond))
	}
	check("registry stopped")
	silent, err := net.Listen("tcp", reg.addr)
	if err != nil {
		t.Fatalf("listen on the registry's address: %v", err)
	}
	defer silent.Close()
	check("registry silent")
}

// TestReleaseSnapshot runs what the release workflow runs, offline and
// unpublished: make release-snapshot (goreleaser check, then goreleaser
// release --snapshot). Every archive of linux and darwin on amd64 and
// arm64 must be there, listed with its right sha256 in checksums.txt,
// hold a hobbs for its platform, and come with a CycloneDX SBOM; the
// snapshot's version is no release, so its binary builds its image
// locally.
func TestReleaseSnapshot(t *testing.T) {
	if setupErr != nil {
		t.Fatalf("setup failed: %v", setupErr)
	}
	out := filepath.Join(repoRoot, "dist", "release", ".out")
	c := exec.Command("make", "release-snapshot")
	c.Dir = repoRoot
	t0 := time.Now()
	if b, err := c.CombinedOutput(); err != nil {
		t.Fatalf("make release-snapshot: %v\n%s", err, b)
	}
	t.Logf("make release-snapshot in %v", time.Since(t0).Round(time.Second))

	sums := map[string]string{}
	b, err := os.ReadFile(filepath.Join(out, "checksums.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		sum, name, ok := strings.Cut(l, "  ")
		if !ok {
			t.Fatalf("checksums.txt: bad line %q", l)
		}
		sums[name] = sum
	}
	for _, goos := range []string{"linux", "darwin"} {
		for _, arch := range []string{"amd64", "arm64"} {
			suffix := "_" + goos + "_" + arch
			archive, sbom := "", ""
			for name := range sums {
				switch {
				case strings.HasSuffix(name, suffix+".tar.gz"):
					archive = name
				case strings.HasSuffix(name, suffix+".cdx.json"):
					sbom = name
				}
			}
			if archive == "" || sbom == "" {
				t.Errorf("%s/%s: archive %q, SBOM %q in checksums.txt", goos, arch, archive, sbom)
				continue
			}
			for _, f := range []string{archive, sbom} {
				data, err := os.ReadFile(filepath.Join(out, f))
				if err != nil {
					t.Fatal(err)
				}
				if got := fmt.Sprintf("%x", sha256.Sum256(data)); got != sums[f] {
					t.Errorf("%s: sha256 %s, checksums.txt says %s", f, got, sums[f])
				}
			}
			checkArchive(t, filepath.Join(out, archive), goos, arch)
			var bom struct {
				BOMFormat string `json:"bomFormat"`
				Metadata  struct {
					Component struct{ Name string } `json:"component"`
				} `json:"metadata"`
				Components []struct{ Name string } `json:"components"`
			}
			data, _ := os.ReadFile(filepath.Join(out, sbom))
			if err := json.Unmarshal(data, &bom); err != nil || bom.BOMFormat != "CycloneDX" ||
				bom.Metadata.Component.Name != "github.com/hobbs-agent/hobbs" || len(bom.Components) == 0 {
				t.Errorf("%s: not a CycloneDX SBOM of hobbs with its modules (%v): %.300s", sbom, err, data)
			}
		}
	}

	bin := filepath.Join(t.TempDir(), "hobbs")
	extract(t, filepath.Join(out, archiveFor(t, sums, runtime.GOOS, runtime.GOARCH)), "hobbs", bin)
	v, err := exec.Command(bin, "version", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		Version   string `json:"version"`
		Release   bool   `json:"release"`
		ImageFrom string `json:"image_from"`
	}
	if err := json.Unmarshal(v, &info); err != nil || !strings.Contains(info.Version, "-snapshot-") || info.Release || info.ImageFrom != "local build" {
		t.Errorf("the snapshot's hobbs version: %v %s", err, v)
	}
	readmeInstall(t, out, info.Version)
}

// releasesURL is where the README's install command downloads from.
const releasesURL = "https://github.com/hobbs-agent/hobbs/releases/latest/download"

// readmeInstall runs the README's first command, with the snapshot served
// where it downloads from and hobbs version where it runs hobbs run, in a
// home of its own with ~/.local/bin on PATH and no Go: the command must
// install the snapshot's hobbs for this system.
func readmeInstall(t *testing.T, out, version string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "```sh\n")
	first, _, _ := strings.Cut(rest, "\n")
	if !ok || !strings.Contains(first, releasesURL) || !strings.HasSuffix(first, "&& hobbs run") {
		t.Fatalf("the README's first command is not the release download ending in hobbs run: %q", first)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(out)))
	defer srv.Close()
	cmd := strings.TrimSuffix(strings.ReplaceAll(first, releasesURL, srv.URL), "hobbs run") + "hobbs version"
	home := t.TempDir()
	c := exec.Command("sh", "-c", cmd)
	c.Env = []string{"HOME=" + home, "PATH=" + filepath.Join(home, ".local", "bin") + ":/usr/local/bin:/usr/bin:/bin", "LANG=C"}
	got, err := c.CombinedOutput()
	if err != nil || !strings.Contains(string(got), "hobbs "+version+" ") {
		t.Errorf("the README's first command (%s): %v\n%s", cmd, err, got)
	}
}

func archiveFor(t *testing.T, sums map[string]string, goos, arch string) string {
	t.Helper()
	for name := range sums {
		if strings.HasSuffix(name, "_"+goos+"_"+arch+".tar.gz") {
			return name
		}
	}
	t.Fatalf("no archive for %s/%s", goos, arch)
	return ""
}

// checkArchive: the archive holds the license, the README, the setup
// guide and a hobbs executable built for goos/arch.
func checkArchive(t *testing.T, archive, goos, arch string) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "hobbs")
	names := extract(t, archive, "hobbs", bin)
	for _, want := range []string{"hobbs", "LICENSE", "README.md", "docs/setup.md"} {
		if !names[want] {
			t.Errorf("%s has no %s (has %v)", filepath.Base(archive), want, names)
		}
	}
	machine := ""
	if goos == "linux" {
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatalf("%s: hobbs is no ELF: %v", filepath.Base(archive), err)
		}
		machine = map[elf.Machine]string{elf.EM_X86_64: "amd64", elf.EM_AARCH64: "arm64"}[f.Machine]
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s: hobbs is dynamically linked", filepath.Base(archive))
			}
		}
		f.Close()
	} else {
		f, err := macho.Open(bin)
		if err != nil {
			t.Fatalf("%s: hobbs is no Mach-O: %v", filepath.Base(archive), err)
		}
		machine = map[macho.Cpu]string{macho.CpuAmd64: "amd64", macho.CpuArm64: "arm64"}[f.Cpu]
		f.Close()
	}
	if machine != arch {
		t.Errorf("%s: hobbs is built for %q", filepath.Base(archive), machine)
	}
}

// extract writes member of the .tar.gz archive to dst and returns the
// names the archive holds.
func extract(t *testing.T, archive, member, dst string) map[string]bool {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", archive, err)
	}
	tr := tar.NewReader(zr)
	names := map[string]bool{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", archive, err)
		}
		names[h.Name] = true
		if h.Name == member {
			w, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(w, tr); err != nil {
				t.Fatal(err)
			}
			w.Close()
		}
	}
	return names
}
