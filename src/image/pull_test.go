package image

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/engine"
	"github.com/hobbs-agent/hobbs/src/engine/enginetest"
	"github.com/hobbs-agent/hobbs/src/errs"
	"golang.org/x/sys/unix"
)

// withRelease makes this test binary a build of version published under
// repo, until the test ends.
func withRelease(t *testing.T, version, repo string) {
	t.Helper()
	saved := release
	t.Cleanup(func() { release = saved })
	SetRelease(version, repo)
}

// TestReleaseVersions: only vMAJOR.MINOR.PATCH (with an alpha, beta or rc
// pre-release) is a release; git describe's forms are development builds.
func TestReleaseVersions(t *testing.T) {
	for v, want := range map[string]bool{
		"v1.2.3": true, "v0.1.0": true, "v10.20.30": true, "v1.2.3-rc.1": true, "v1.2.3-beta2": true,
		"dev": false, "": false, "1.2.3": false, "v1.2": false, "v01.2.3": false, "e1abc6f": false, "e1abc6f-dirty": false,
		"v1.2.3-4-gabc1234": false, "v1.2.3-dirty": false, "v1.2.3-4-gabc1234-dirty": false, "v1.2.3-SNAPSHOT-abc1234": false,
	} {
		if got := IsReleaseVersion(v); got != want {
			t.Errorf("IsReleaseVersion(%q) = %v, want %v", v, got, want)
		}
	}
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"v1.2.3", "v1.2.3", 0}, {"v1.2.3", "v1.2.4", -1}, {"v1.10.0", "v1.9.9", 1}, {"v2.0.0", "v10.0.0", -1},
		{"v1.2.3-rc.1", "v1.2.3", -1}, {"v1.2.3-rc.10", "v1.2.3-rc.9", 1}, {"v1.2.3-alpha.2", "v1.2.3-beta.1", -1},
	} {
		got, ok := compareVersions(c.a, c.b)
		if !ok || got != c.want {
			t.Errorf("compareVersions(%s, %s) = %d, %v; want %d", c.a, c.b, got, ok, c.want)
		}
	}
	if _, ok := compareVersions("e1abc6f", "v1.2.3"); ok {
		t.Error("a development version compared as a release")
	}
}

// TestDefaultImageResolution: a release build's default image is its own
// version in the release repository (the link-time one, else ghcr.io); a
// development build's is the local build.
func TestDefaultImageResolution(t *testing.T) {
	local := regexp.MustCompile(`^hobbs:local-[0-9a-f]{12}$`)
	withRelease(t, "v1.2.3", "")
	if got := DefaultImage(); got != "ghcr.io/hobbs-agent/hobbs:v1.2.3" || ImageRef("") != got || ImageSource() != "published" {
		t.Errorf("release: DefaultImage %q, ImageRef %q, source %q", got, ImageRef(""), ImageSource())
	}
	if ImageRef("mine:1") != "mine:1" {
		t.Errorf("ImageRef(mine:1) = %q", ImageRef("mine:1"))
	}
	SetRelease("v2.0.0-rc.1", "127.0.0.1:5000/hobbs")
	if got := DefaultImage(); got != "127.0.0.1:5000/hobbs:v2.0.0-rc.1" {
		t.Errorf("release with a repository: %q", got)
	}
	for _, v := range []string{"dev", "v1.2.3-4-gabc1234", "e1abc6f-dirty", ""} {
		SetRelease(v, "127.0.0.1:5000/hobbs")
		if got := DefaultImage(); !local.MatchString(got) || PublishedImage() != "" || ImageSource() != "local build" {
			t.Errorf("version %q: DefaultImage %q, PublishedImage %q, source %q", v, got, PublishedImage(), ImageSource())
		}
	}
	if Version() != "dev" {
		t.Errorf("Version() after SetRelease(\"\") = %q", Version())
	}
}

// registryEngine is a FAKE docker CLI with one image, ref, which exists
// once pulled (or from the start with present): `image inspect` answers
// its id and labels (dev.hobbs.version=label), `pull` makes it exist.
func registryEngine(t *testing.T, ref, label string, present bool) (engine.CLI, func() []string) {
	t.Helper()
	state := filepath.Join(t.TempDir(), "present")
	if present {
		if err := os.WriteFile(state, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return enginetest.Script(t, `case "$1" in
pull) echo "v: Pulling from hobbs"; touch '`+state+`'; exit 0;;
image)
	for a; do last=$a; done
	if [ "$last" = '`+ref+`' ] && [ -e '`+state+`' ]; then
		echo 'sha256:1111 {"dev.hobbs.version":"`+label+`"}'; exit 0
	fi
	echo "Error: No such image: $last" >&2; exit 1;;
esac
exit 0
`)
}

// calls counts the calls whose arguments start with prefix.
func count(calls []string, prefix string) int {
	n := 0
	for _, c := range calls {
		if strings.HasPrefix(c, prefix) {
			n++
		}
	}
	return n
}

// plainRegistry is a registry stand-in on loopback that answers GET /v2/
// in plain HTTP, as the engine's registry on loopback does.
func plainRegistry(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) }))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// TestEnsurePublished: a release build pulls its published image when it
// is missing (progress on Progress), uses it as it is when present (no
// pull), and refuses an image of another version, naming which to update.
func TestEnsurePublished(t *testing.T) {
	for _, v := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "DOCKER_HOST"} {
		t.Setenv(v, "")
	}
	host := plainRegistry(t)
	withRelease(t, "v1.2.3", host+"/hobbs")
	ref := host + "/hobbs:v1.2.3"

	e, calls := registryEngine(t, ref, "v1.2.3", false)
	var progress bytes.Buffer
	res, err := Ensure(context.Background(), "", BuildOptions{Engine: e, Progress: &progress})
	if err != nil {
		t.Fatalf("missing image: %v", err)
	}
	if res.Image != ref || !res.Pulled || res.Built {
		t.Errorf("missing image: %+v", res)
	}
	if count(calls(), "pull "+ref) != 1 || count(calls(), "build") != 0 || !strings.Contains(progress.String(), "pulling "+ref) {
		t.Errorf("missing image: calls %q, progress %q", calls(), progress.String())
	}
	res, err = Ensure(context.Background(), "", BuildOptions{Engine: e, Progress: io.Discard})
	if err != nil || res.Pulled || res.Image != ref {
		t.Errorf("present image: %+v, %v", res, err)
	}
	if n := count(calls(), "pull"); n != 1 {
		t.Errorf("pulled %d times, want once: %q", n, calls())
	}

	for _, c := range []struct {
		label, want string
		advice      errs.Kind
	}{
		{"v1.2.2", "is hobbs v1.2.2, this hobbs is v1.2.3", OlderPublished},
		{"v1.3.0", "is hobbs v1.3.0, this hobbs is v1.2.3", NewerImage},
		{"e1abc6f-dirty", "is hobbs e1abc6f-dirty", DevImage},
		{"", "carries no hobbs version", Unversioned},
	} {
		e, calls := registryEngine(t, ref, c.label, true)
		_, err := Ensure(context.Background(), "", BuildOptions{Engine: e, Progress: io.Discard})
		var he *errs.Error
		if !errors.As(err, &he) || !strings.Contains(he.Msg, c.want) || errs.AdviceOf(err).Kind != c.advice {
			t.Errorf("label %q: %v (advice %v), want %q / %s", c.label, err, errs.AdviceOf(err), c.want, c.advice)
		}
		if count(calls(), "pull") != 0 {
			t.Errorf("label %q: pulled a present image", c.label)
		}
	}

	// An image config.yaml or --image names: one of another version is
	// refused with the published name of this one; one without the label
	// (not a Hobbs release image) is run.
	other := host + "/mine:1"
	e, _ = registryEngine(t, other, "v1.2.2", true)
	_, err = Ensure(context.Background(), other, BuildOptions{Engine: e, Progress: io.Discard})
	if a := errs.AdviceOf(err); a.Kind != OlderImage || a.Facts["own"] != ref {
		t.Errorf("named image of an older version: %v (advice %v)", err, a)
	}
	e, _ = registryEngine(t, other, "", true)
	if _, err := Ensure(context.Background(), other, BuildOptions{Engine: e, Progress: io.Discard}); err != nil {
		t.Errorf("named image without a version label: %v", err)
	}

	// A development build runs any image it is given.
	SetRelease("dev", "")
	e, _ = registryEngine(t, ref, "v0.0.1", true)
	if _, err := Ensure(context.Background(), ref, BuildOptions{Engine: e, Progress: io.Discard}); err != nil {
		t.Errorf("development build, image of a release: %v", err)
	}
}

// TestEnsurePublishedUnreachable: a registry that refuses connections or
// accepts them and never answers fails the run within registryTimeout,
// exit 3, with the ways out (CannotGetPublished) and without
// a pull or a build.
func TestEnsurePublishedUnreachable(t *testing.T) {
	for _, v := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "DOCKER_HOST"} {
		t.Setenv(v, "")
	}
	saved := registryTimeout
	t.Cleanup(func() { registryTimeout = saved })
	registryTimeout = 500 * time.Millisecond

	refused := refusedAddr(t)
	silent, err := net.Listen("tcp", "127.0.0.1:0") // accepts (the kernel's backlog), never answers
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { silent.Close() })

	for name, host := range map[string]string{"refused": refused, "silent": silent.Addr().String()} {
		withRelease(t, "v1.2.3", host+"/hobbs")
		e, calls := registryEngine(t, host+"/hobbs:v1.2.3", "v1.2.3", false)
		t0 := time.Now()
		_, err := Ensure(context.Background(), "", BuildOptions{Engine: e, Progress: io.Discard})
		d := time.Since(t0)
		if errs.Code(err) != errs.Missing || !strings.Contains(err.Error(), "registry "+host+" not reachable") {
			t.Errorf("%s: %v (exit %d), want exit 3 naming the registry", name, err, errs.Code(err))
		}
		if a := errs.AdviceOf(err); a.Kind != CannotGetPublished || a.Facts["image"] != host+"/hobbs:v1.2.3" {
			t.Errorf("%s: advice %v, want the ways out (%s)", name, a, CannotGetPublished)
		}
		if d > registryTimeout+time.Second {
			t.Errorf("%s: took %v", name, d)
		}
		if n := count(calls(), "pull") + count(calls(), "build"); n != 0 {
			t.Errorf("%s: pulled or built: %q", name, calls())
		}
	}
}

// TestPullErrors: a pull that fails on the network is the registry's
// unreachability (exit 3); a tag the registry does not have is named as
// such, with the ways out.
func TestPullErrors(t *testing.T) {
	for _, v := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "DOCKER_HOST"} {
		t.Setenv(v, "")
	}
	host := plainRegistry(t)
	ref := host + "/hobbs:v1.2.3"
	for _, c := range []struct{ says, want string }{
		{"Error response from daemon: Get \"https://" + host + "/v2/\": dial tcp " + host + ": connect: connection refused", "not reachable"},
		{"Error response from daemon: manifest for " + ref + " not found: manifest unknown: manifest unknown", "is not in the registry"},
	} {
		e, _ := enginetest.Script(t, `echo '`+c.says+`' >&2; exit 1`)
		err := pull(context.Background(), BuildOptions{Engine: e, Progress: io.Discard}, ref, true)
		if errs.Code(err) != errs.Missing || !strings.Contains(err.Error(), c.want) || errs.AdviceOf(err).Kind != CannotGetPublished {
			t.Errorf("pull saying %q: %v (advice %v)", c.says, err, errs.AdviceOf(err))
		}
	}
}

// refusedAddr is an address on 127.0.0.1 that refuses connections until the
// test ends: a port held by a socket that is bound and does not listen. (A
// port found free and closed again can be given to another program on the
// machine, which would then answer in its place; the kernel gives no program
// asking for a free port one that is bound.)
func refusedAddr(t *testing.T) string {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", sa.(*unix.SockaddrInet4).Port)
}
