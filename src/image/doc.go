// Package image makes sure the Hobbs image a run needs is on the engine,
// and keeps the engine's Hobbs images in order. It drives the engine only
// through its CLI (package engine), so docker and podman both work.
//
// A release build of hobbs (a vX.Y.Z version set at link time) runs its
// published image, <image repository>:<version>, pulled once when missing
// (pull.go), whose dev.hobbs.version label must be the binary's. A
// development build builds its own: dist/Dockerfile FROM a runtime base (a
// build arg) on a context written from the binary's embedded assets plus a
// static linux hobbs binary (image.go). It carries dev.hobbs.inputs, a hash
// of everything that went in (assets, binary, base image id); Ensure
// rebuilds only when it changes. The binary's digest is kept in the user's
// cache while the file keeps its identity (digest.go).
//
// A runtime base is built from dist/Dockerfile.runtime where the internet
// is reachable (BuildRuntime, offline.go checks first), or made from this
// machine's Debian packages where only a package mirror is
// (BuildDebianBase, debianbase.go). A build's output goes in full to the
// build log and a line per step to the user (buildlog.go).
//
// Prune removes the images this user's hobbs built that nothing uses
// (prune.go). VersionInfo is what hobbs version says of the binary and its
// image (version.go).
//
// Errors name what went wrong and carry advice (kinds.go) that the command
// layer words.
package image
