package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

type versionInfo struct {
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

// String is the version line after "hobbs ": version, revision, Go, platform.
func (v versionInfo) String() string {
	rev := ""
	if v.Revision != "" {
		rev = " (" + v.Revision + ")"
	}
	return fmt.Sprintf("%s%s %s %s", v.Version, rev, v.Go, v.Platform)
}

func buildVersion() versionInfo {
	v := versionInfo{Version: version, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
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
		Use:     "version",
		Short:   "Print the hobbs version",
		Example: "  hobbs version\n  hobbs version --json",
		Args:    usageArgs(cobra.NoArgs),
	}
	out := a.jsonFlag(cmd, "print as JSON")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		v := buildVersion()
		return out.print(v, func(w io.Writer) error {
			_, err := fmt.Fprintf(w, "hobbs %s\n", v)
			return err
		})
	}
	return cmd
}
