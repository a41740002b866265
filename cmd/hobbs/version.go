package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/hobbs-agent/hobbs/src/launcher"
)

// version is set at build time with -ldflags "-X main.version=…". A release
// version (v1.2.3) makes hobbs run the published image of that version;
// anything else is a development build, which builds its image locally.
var version = "dev"

// imageRepo is the repository release images are published under, set at
// build time with -ldflags "-X main.imageRepo=…" (default
// launcher.DefaultRepo).
var imageRepo = ""

func init() { launcher.SetRelease(releaseVersion(), imageRepo) }

// releaseVersion is version, or, when no version was set at link time, the
// module version Go recorded: `go install …/cmd/hobbs@v1.2.3` makes a
// release build of v1.2.3 (a local build records "(devel)" or a
// pseudo-version, which are no releases).
func releaseVersion() string {
	if version != "dev" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && launcher.IsReleaseVersion(bi.Main.Version) {
		return bi.Main.Version
	}
	return version
}

type versionInfo struct {
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
func (v versionInfo) String() string {
	rev := ""
	if v.Revision != "" {
		rev = " (" + v.Revision + ")"
	}
	return fmt.Sprintf("%s%s %s %s\nimage %s (%s)", v.Version, rev, v.Go, v.Platform, v.Image, v.ImageFrom)
}

func buildVersion() versionInfo {
	v := versionInfo{Version: launcher.Version(), Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH,
		Release: launcher.IsReleaseVersion(launcher.Version()), Image: launcher.DefaultImage(), ImageFrom: launcher.ImageSource()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v.Revision = s.Value[:12]
			}
		}
	}
	return v
}

func newVersionCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the hobbs version and the image hobbs run uses",
		Long: `Print this binary's version and the image hobbs run uses: image from
config.yaml when it names one; else, for a release build (a version such as
v1.2.3, set when the binary was built), the published image of that version,
which hobbs run pulls when it is missing; else (a development build) the
image hobbs run builds locally, hobbs:local-<version>. --version prints the
same without reading config.yaml.`,
		Example: "  hobbs version\n  hobbs version --json",
		Args:    usageArgs(cobra.NoArgs),
	}
	out := a.jsonFlag(cmd, "print as JSON")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		v := buildVersion()
		// A config.yaml that does not load leaves the default: hobbs run
		// reports it; the version is printed either way.
		if in, err := a.instance(); err == nil && in.Exists() {
			if cfg, err := a.config(in); err == nil && cfg.Image != "" {
				v.Image, v.ImageFrom = cfg.Image, "config.yaml"
			}
		}
		return out.print(v, func(w io.Writer) error {
			_, err := fmt.Fprintf(w, "hobbs %s\n", v)
			return err
		})
	}
	return cmd
}
