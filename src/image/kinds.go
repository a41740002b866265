package image

import "github.com/hobbs-agent/hobbs/src/errs"

// Kinds of advice the errors of this package carry; the command layer
// words them (cmd/hobbs/hints_image.go).
const (
	// NoDefaultBase: the default runtime base is missing.
	NoDefaultBase errs.Kind = "image.no-default-base"
	// NoBase: a runtime base the user named is missing (facts: image,
	// engine, default).
	NoBase errs.Kind = "image.no-base"
	// NoBaseNamed: no runtime base image is named at all.
	NoBaseNamed errs.Kind = "image.no-base-named"
	// NoStaticBinary: no static linux hobbs binary for the image (facts:
	// arch, env).
	NoStaticBinary errs.Kind = "image.no-static-binary"
	// Offline: a runtime base build needs the internet.
	Offline errs.Kind = "image.offline"
	// NoApt: apt and dpkg, which a base from Debian packages needs, are
	// not here.
	NoApt errs.Kind = "image.no-apt"
	// ArchMismatch: this machine's packages are not for the engine's
	// architecture.
	ArchMismatch errs.Kind = "image.arch-mismatch"
	// AptUnknownPackages: apt does not know the packages.
	AptUnknownPackages errs.Kind = "image.apt-unknown-packages"
	// AptFailed: apt could not get the packages.
	AptFailed errs.Kind = "image.apt-failed"
	// CannotGetPublished: this release's published image cannot be
	// pulled (facts: image).
	CannotGetPublished errs.Kind = "image.cannot-get-published"
	// RegistryUnreachable: another registry image cannot be pulled.
	RegistryUnreachable errs.Kind = "image.registry-unreachable"
	// Unversioned: the image carries no hobbs version (facts: image).
	Unversioned errs.Kind = "image.unversioned"
	// DevImage: a development hobbs built the image (facts: have, image,
	// own).
	DevImage errs.Kind = "image.dev-image"
	// OlderPublished: the published image is older than this hobbs
	// (facts: image).
	OlderPublished errs.Kind = "image.older-published"
	// OlderImage: the image is older than this hobbs (facts: own, have).
	OlderImage errs.Kind = "image.older-image"
	// NewerImage: the image is newer than this hobbs (facts: have, own).
	NewerImage errs.Kind = "image.newer-image"
	// NoClaude: the image has no Claude Code (claude is not on its
	// PATH), which a session, a chat turn and a playbook run start
	// (facts: image, default).
	NoClaude errs.Kind = "image.no-claude"
)
