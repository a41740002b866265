package image

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/engine/enginetest"
	"github.com/hobbs-agent/hobbs/src/errs"
)

// TestDefaultImageNamesThisBinary: the default image is hobbs:local-<version>,
// the version naming this binary's build (its Go build id), so binaries of
// different builds never share a name; a file that is no Go ELF binary is
// named by its content.
func TestDefaultImageNamesThisBinary(t *testing.T) {
	if !regexp.MustCompile(`^hobbs:local-[0-9a-f]{12}$`).MatchString(DefaultImage()) {
		t.Fatalf("DefaultImage() = %q, want hobbs:local-<12 hex>", DefaultImage())
	}
	if ImageRef("") != DefaultImage() || ImageRef("mine:1") != "mine:1" {
		t.Errorf("ImageRef: %q, %q", ImageRef(""), ImageRef("mine:1"))
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if goBuildID(self) == "" {
		t.Errorf("no Go build id read from %s", self)
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	os.WriteFile(a, []byte("one build"), 0o755)
	os.WriteFile(b, []byte("another build"), 0o755)
	if versionOf(a) == versionOf(b) || versionOf(a) == versionOf(self) {
		t.Errorf("versions not distinct: %s %s %s", versionOf(a), versionOf(b), versionOf(self))
	}
}

// TestBuildRuntimeOffline: with a host of the runtime base unreachable,
// hobbs build --runtime fails at once with the offline hint, before any
// build starts; a proxy in the environment skips the check.
func TestBuildRuntimeOffline(t *testing.T) {
	for _, v := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "DOCKER_HOST"} {
		t.Setenv(v, "")
	}
	closed := refusedAddr(t)
	saved := onlineHosts
	t.Cleanup(func() { onlineHosts = saved })
	onlineHosts = []string{closed}

	e, calls := enginetest.Script(t, "exit 0")
	start := time.Now()
	_, err := BuildRuntime(context.Background(), BuildOptions{Engine: e, Base: "hobbs-runtime:latest", Progress: os.Stderr})
	if err == nil {
		t.Fatal("built without the internet")
	}
	if errs.AdviceOf(err).Kind != Offline {
		t.Fatalf("err %v without the offline advice", err)
	}
	if d := time.Since(start); d > 2*onlineTimeout {
		t.Errorf("took %v", d)
	}
	for _, c := range calls() {
		if strings.HasPrefix(c, "build") {
			t.Errorf("a build started: %s", c)
		}
	}
	t.Setenv("HTTPS_PROXY", "http://proxy.example:3128")
	if err := checkOnline(context.Background()); err != nil {
		t.Errorf("with a proxy: %v", err)
	}
}
