package main

import (
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/image"
)

// imageHints are the words of package image's advice: the image hobbs run
// uses, its runtime base, the registry and the versions.
var imageHints = map[errs.Kind]words{
	image.NoDefaultBase: say("build it once with `hobbs build --runtime` (needs the internet; with a Debian package mirror only, " +
		"`hobbs build --base-from-debian`, without Claude Code; see docs/setup.md, \"A runtime base without the internet\"), " +
		"or set base_image in config.yaml to an image you have"),
	image.NoBase: say("the engine has no image {image}: pull it ({engine} pull {image}) or load it ({engine} load), or check the name ({engine} images); " +
		"a runtime base needs Node.js and Claude Code: `hobbs build --runtime` makes one as {default}"),
	image.NoBaseNamed: say("pass --base IMAGE or set base_image in config.yaml"),
	image.NoStaticBinary: say("build one with `make build` (CGO_ENABLED=0 GOOS=linux GOARCH={arch} go build -o hobbs ./cmd/hobbs) " +
		"and pass --binary FILE or set {env}=FILE"),
	image.Offline: say("building the runtime base needs the internet (Debian's image and packages, npm); with only a Debian package mirror, " +
		"hobbs build --base-from-debian makes one without Claude Code; offline, load a base image saved elsewhere (docker save / docker load) " +
		"or point base_image in config.yaml at a local image with Node.js and Claude Code: see docs/setup.md, \"A runtime base without the internet\""),
	image.NoApt:        say("on another system, carry a runtime base over (docker save / docker load): docs/setup.md, \"A runtime base without the internet\""),
	image.ArchMismatch: say("make the base on a machine of the engine's architecture, or carry one over (docker save / docker load)"),
	image.AptUnknownPackages: say("apt does not know these packages: update its package lists (sudo apt-get update), " +
		"or check this machine's sources (/etc/apt/sources.list)"),
	image.AptFailed: say("apt could not get the packages from this machine's sources; apt-get update and the sources (/etc/apt/sources.list) are where to look"),
	image.CannotGetPublished: say("build the image here instead: `hobbs build` makes {image} from this binary on base_image in config.yaml " +
		"(a runtime base you have: `hobbs build --runtime` where there is internet, or --base IMAGE), " +
		"or run an image you already have with --image NAME (image in config.yaml); see docs/setup.md, \"Without the registry\""),
	image.RegistryUnreachable: say("check the network, or run an image you have with --image NAME (image in config.yaml)"),
	image.Unversioned: say("it is not the published image of this version: remove it (docker image rm {image}) and run again to pull it, " +
		"or build it from this binary with `hobbs build`"),
	image.DevImage: say("the image was built by a development hobbs ({have}): rebuild it with this one (`hobbs build --tag {image}`), " +
		"or run {own} (--image, or image in config.yaml)"),
	image.OlderPublished: say("update the image: it is older than this hobbs; remove it (docker image rm {image}) and run again to pull the published one, " +
		"or rebuild it with `hobbs build`"),
	image.OlderImage: say("update the image: set image in config.yaml (or --image) to {own}, or leave it empty to run this hobbs's own; " +
		"or install that release ({have}) to match the image"),
	image.NewerImage: say("update hobbs: the image is newer; install its release {have} (docs/setup.md, \"Install\"), or run {own} (--image, or image in config.yaml)"),
	image.NoClaude: say("get a runtime base with Claude Code: `hobbs build --runtime` makes {default} (needs the internet), " +
		"or set base_image in config.yaml to an image that has it; then hobbs build (docs/setup.md, \"A runtime base without the internet\")"),
}
