package image

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// VersionInfo is what hobbs version prints: this binary and the image
// hobbs run uses.
type VersionInfo struct {
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
	Release  bool   `json:"release"`
	// Image is what hobbs run uses (ImageFrom: "config.yaml", "published"
	// or "local build").
	Image     string `json:"image,omitempty"`
	ImageFrom string `json:"image_from,omitempty"`
}

// String is what follows "hobbs ": the version line (version, revision,
// Go, platform), then the image line.
func (v VersionInfo) String() string {
	rev := ""
	if v.Revision != "" {
		rev = " (" + v.Revision + ")"
	}
	return fmt.Sprintf("%s%s %s %s\nimage %s (%s)", v.Version, rev, v.Go, v.Platform, v.Image, v.ImageFrom)
}

// BuildVersion is this binary's VersionInfo: the version SetRelease
// recorded, the commit Go recorded, and the default image. configImage,
// the image config.yaml names ("" when none, or when it does not load),
// replaces the default.
func BuildVersion(configImage string) VersionInfo {
	v := VersionInfo{Version: Version(), Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH,
		Release: IsReleaseVersion(Version()), Image: DefaultImage(), ImageFrom: ImageSource()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v.Revision = s.Value[:12]
			}
		}
	}
	if configImage != "" {
		v.Image, v.ImageFrom = configImage, "config.yaml"
	}
	return v
}

// ReleaseVersion is linked, the version set at link time, or, when none
// was ("dev"), the module version Go recorded: `go install …/cmd/hobbs@v1.2.3`
// makes a release build of v1.2.3 (a local build records "(devel)" or a
// pseudo-version, which are no releases).
func ReleaseVersion(linked string) string {
	if linked != "dev" {
		return linked
	}
	if bi, ok := debug.ReadBuildInfo(); ok && IsReleaseVersion(bi.Main.Version) {
		return bi.Main.Version
	}
	return linked
}
