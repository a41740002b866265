package image

import (
	"runtime"
	"strings"
	"testing"
)

func TestBuildVersion(t *testing.T) {
	if got := ReleaseVersion("v1.2.3"); got != "v1.2.3" {
		t.Errorf("linked version: %s", got)
	}
	if got := ReleaseVersion("dev"); got != "dev" { // a test binary records no release
		t.Errorf("dev build: %s", got)
	}
	v := BuildVersion("")
	if v.Version != Version() || v.Image != DefaultImage() || v.ImageFrom != ImageSource() || v.Go != runtime.Version() {
		t.Errorf("%+v", v)
	}
	v = BuildVersion("registry.example/me/hobbs:7")
	if v.Image != "registry.example/me/hobbs:7" || v.ImageFrom != "config.yaml" {
		t.Errorf("config image: %+v", v)
	}
	v.Revision = "0123456789ab"
	lines := strings.Split(v.String(), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], v.Version+" (0123456789ab) "+v.Go+" "+v.Platform) ||
		lines[1] != "image registry.example/me/hobbs:7 (config.yaml)" {
		t.Errorf("String: %q", v.String())
	}
}
