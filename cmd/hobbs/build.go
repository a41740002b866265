package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hobbs-agent/hobbs"
	"github.com/hobbs-agent/hobbs/src/engine"
	"github.com/hobbs-agent/hobbs/src/image"
	"github.com/hobbs-agent/hobbs/src/instance"
)

// claudeCodeNote is what hobbs build --base-from-debian says of Claude Code
// once the base is made.
const claudeCodeNote = "Claude Code is not in this base: it comes only from its own registry (npm, registry.npmjs.org), " +
	"not from Debian. Sessions start and every other tool is there (hobbs run -- COMMAND); for claude, build the base " +
	"with hobbs build --runtime where registry-1.docker.io, deb.debian.org and registry.npmjs.org are reachable, or " +
	"carry one over (docs/setup.md, \"A runtime base without the internet\")"

func newBuildCmd(a *app) *cobra.Command {
	var base, tag, binary string
	var runtimeBase, fromDebian, verbose bool
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Build the Hobbs image from the binary's embedded assets",
		Long: `Build the Hobbs image: dist/Dockerfile on top of a runtime base, with this
binary's embedded identity, skills, templates and policy, and a static linux
hobbs binary (this one when it is one; else --binary FILE or HOBBS_BINARY).
The repository is not needed. stderr shows a line per Dockerfile step (on a
terminal each replaces the last), --verbose the builder's whole output; the
whole output of the last build is in $XDG_STATE_HOME/hobbs/logs/build.log.

It builds the image hobbs run uses: --tag, else image from config.yaml, else
this binary's default (hobbs version prints it): for a development build
hobbs:local-<version>, a name of this hobbs binary's own (two binaries on
one engine never replace each other's image); for a release build the name
of its published image, which hobbs run otherwise pulls, so a machine that
cannot reach the registry can make it here. The image is labelled with a
hash of its inputs; hobbs run rebuilds it only when that hash changes, so you
rarely need this command. The image a build replaces under the same name is
removed, unless a container still uses it (hobbs prune removes it later).

--runtime builds the production runtime base instead (dist/Dockerfile.runtime:
Debian, Node.js, Claude Code, git, gh, ripgrep, jq, sqlite3, tini) under the
base image name. It downloads from the internet, and fails at once with a
hint when this machine cannot reach it (docs/setup.md says how to get a base
without the internet).

--base-from-debian makes a runtime base, under the same name, where the
internet is limited to a Debian package mirror: apt downloads the Debian
packages of --runtime's tools (Node.js, git, gh, ripgrep, jq, sqlite3, tini
and a shell) from this machine's own sources, and the engine imports their
files (Debian and Ubuntu hosts; no root needed). Claude Code is not in it:
it comes only from its own registry (npm).`,
		Example: `  hobbs build                          # what hobbs run uses, FROM base_image (config.yaml)
  hobbs build --runtime                # the runtime base first (once)
  hobbs build --base-from-debian       # or one from this machine's Debian packages (no Claude Code)
  hobbs build --base debian-node:1 --tag hobbs:test
  HOBBS_BINARY=./hobbs-linux-arm64 hobbs build   # from a macOS host`,
		Args: usageArgs(cobra.NoArgs),
	}
	cmd.Flags().StringVar(&base, "base", "", "runtime base image (default base_image from config.yaml)")
	cmd.Flags().StringVar(&tag, "tag", "", "image name to build (default image from config.yaml, else the image hobbs version prints)")
	cmd.Flags().StringVar(&binary, "binary", "", "static linux hobbs binary to put in the image (default: this one, or $HOBBS_BINARY)")
	cmd.Flags().BoolVar(&runtimeBase, "runtime", false, "build the runtime base image (needs the internet) instead")
	cmd.Flags().BoolVar(&fromDebian, "base-from-debian", false, "build the runtime base from this machine's Debian packages instead (no Claude Code)")
	cmd.MarkFlagsMutuallyExclusive("runtime", "base-from-debian")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "show the builder's whole output, not a line per step")
	out := a.jsonFlag(cmd, "print the result as JSON")
	cmd.RunE = a.withInstance(func(cmd *cobra.Command, args []string, in instance.Instance) error {
		cfg, err := a.config(in)
		if err != nil {
			return err
		}
		e := engine.New(cfg.Engine)
		if _, err := e.ServerVersion(cmd.Context()); err != nil {
			return err
		}
		opt := image.BuildOptions{Engine: e, Assets: hobbs.Assets, Base: base, Tag: tag, Binary: binary, Progress: a.errOut, Verbose: verbose}
		opt.Defaults(cfg, runtimeBase || fromDebian)
		build := image.Build
		switch {
		case runtimeBase:
			build = image.BuildRuntime
		case fromDebian:
			build = image.BuildFromDebian
		}
		res, err := build(cmd.Context(), opt)
		if err != nil {
			return err
		}
		if fromDebian {
			fmt.Fprintf(a.errOut, "note: %s\n", claudeCodeNote)
		}
		if res.NoClaude {
			e := image.NoClaudeCode(res.Image)
			a.warn("%s", e.Msg)
			a.hint("%s", adviceText(e.Advice))
		}
		return out.printLine(res, res.Image, nil)
	})
	return cmd
}
