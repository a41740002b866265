package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/hobbs-agent/hobbs/src/image"
)

// version is set at build time with -ldflags "-X main.version=…". A release
// version (v1.2.3) makes hobbs run the published image of that version;
// anything else is a development build, which builds its image locally.
var version = "dev"

// imageRepo is the repository release images are published under, set at
// build time with -ldflags "-X main.imageRepo=…" (default
// image.DefaultRepo).
var imageRepo = ""

func init() { image.SetRelease(image.ReleaseVersion(version), imageRepo) }

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
		// A config.yaml that does not load leaves the default: hobbs run
		// reports it; the version is printed either way.
		configImage := ""
		if in, err := a.instance(); err == nil && in.Exists() {
			if cfg, err := a.config(in); err == nil {
				configImage = cfg.Image
			}
		}
		v := image.BuildVersion(configImage)
		return out.print(v, func(w io.Writer) error {
			_, err := fmt.Fprintf(w, "hobbs %s\n", v)
			return err
		})
	}
	return cmd
}
