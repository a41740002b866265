package image

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/hobbs-agent/hobbs/src/engine"
	"github.com/hobbs-agent/hobbs/src/errs"
)

// LabelVersion is the hobbs version an image carries: the version of the
// hobbs binary inside it. Release images get it from the release workflow,
// local builds from the binary that builds them.
const LabelVersion = "dev.hobbs.version"

// DefaultRepo is the repository release images are published under; a
// build can name another at link time (main.imageRepo).
const DefaultRepo = "ghcr.io/hobbs-agent/hobbs"

// release is what the command layer says of this binary (SetRelease).
var release = struct{ version, repo string }{"dev", DefaultRepo}

// SetRelease records the version this binary was built as and the
// repository its release images are published under. An empty repo keeps
// DefaultRepo.
func SetRelease(version, repo string) {
	if version == "" {
		version = "dev"
	}
	if repo == "" {
		repo = DefaultRepo
	}
	release.version, release.repo = version, repo
}

// Version is this binary's version as SetRelease recorded it ("dev" by
// default).
func Version() string { return release.version }

// releaseRe is a release version: vMAJOR.MINOR.PATCH, optionally with a
// pre-release of alpha, beta or rc and a number. git describe's forms
// (v1.2.3-4-gabc1234, …-dirty, a bare commit hash) are not releases.
var releaseRe = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-(alpha|beta|rc)(\.?[0-9]+)?)?$`)

// IsReleaseVersion reports whether v names a release.
func IsReleaseVersion(v string) bool { return releaseRe.MatchString(v) }

// PublishedImage is the image a release build runs when config.yaml names
// none: the release repository tagged with this binary's version. It is ""
// for a development build, which builds its image locally.
func PublishedImage() string {
	if !IsReleaseVersion(release.version) {
		return ""
	}
	return release.repo + ":" + release.version
}

// ImageSource says where DefaultImage comes from: "published" for a
// release build, "local build" otherwise.
func ImageSource() string {
	if PublishedImage() != "" {
		return "published"
	}
	return "local build"
}

// ensurePublished makes sure the published image ref is here: used as it
// is when present, else pulled. It is never built: without the registry it
// fails at once (exit 3) naming the ways out. Either way the image must be
// of this binary's version.
func ensurePublished(ctx context.Context, ref string, opt BuildOptions) (*Result, error) {
	img, ok, err := imageInfo(ctx, opt.Engine, ref)
	if err != nil {
		return nil, err
	}
	pulled := false
	if !ok {
		if err := pull(ctx, opt, ref, true); err != nil {
			return nil, err
		}
		if img, ok, err = imageInfo(ctx, opt.Engine, ref); err != nil {
			return nil, err
		}
		if !ok {
			return nil, errs.Failf("%s pull %s succeeded, yet the engine has no such image", opt.Engine.Bin, ref)
		}
		pulled = true
	}
	if err := matchVersion(ref, img.labels[LabelVersion], true); err != nil {
		return nil, err
	}
	return &Result{Image: ref, Pulled: pulled, NoClaude: noClaude(img.labels)}, nil
}

// pull pulls ref with its progress on opt.Progress. The registry is
// checked first (checkRegistry), so one that cannot be reached fails in
// seconds rather than after the engine's own retries. published says ref
// is this release's own image: its errors then name the ways out.
func pull(ctx context.Context, opt BuildOptions, ref string, published bool) error {
	host := registryHost(ref)
	if err := checkRegistry(ctx, host); err != nil {
		if ctx.Err() != nil {
			return &errs.Error{Code: errs.Interrupted, Msg: "pull " + ref + ": interrupted"}
		}
		return registryError(ref, host, err.Error(), published)
	}
	fmt.Fprintf(opt.Progress, "pulling %s\n", ref)
	err := opt.Engine.Stream(ctx, opt.Progress, nil, "pull", ref)
	if err == nil || errs.Code(err) == errs.Interrupted || engine.Unreachable(err) != nil {
		return err
	}
	msg := err.Error()
	if isNetworkMsg(msg) {
		return registryError(ref, host, msg, published)
	}
	if published && isNotPublishedMsg(msg) {
		return (&errs.Error{Code: errs.Missing, Msg: fmt.Sprintf("%s is not in the registry", ref), Err: err}).
			Advise(CannotGetPublished, "image", ref)
	}
	return err
}

// registryError is the error of a registry that cannot be reached.
func registryError(ref, host, why string, published bool) error {
	e := errs.Missingf("registry %s not reachable, so %s cannot be pulled: %s", host, ref, why)
	if published {
		return e.Advise(CannotGetPublished, "image", ref)
	}
	return e.Advise(RegistryUnreachable)
}

// registryHost is the registry ref is pulled from (Docker Hub for a name
// without a host).
func registryHost(ref string) string {
	first, _, ok := strings.Cut(ref, "/")
	if !ok || !(strings.ContainsAny(first, ".:") || first == "localhost") || first == "docker.io" || first == "index.docker.io" {
		return "registry-1.docker.io"
	}
	return first
}

// networkMsgs are what a pull says when the registry could not be reached
// (lower case).
var networkMsgs = []string{"dial tcp", "connection refused", "no such host", "i/o timeout", "tls handshake timeout",
	"network is unreachable", "no route to host", "server misbehaving", "context deadline exceeded", "client.timeout exceeded",
	"connection reset by peer"}

func isNetworkMsg(msg string) bool {
	m := strings.ToLower(msg)
	for _, s := range networkMsgs {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// isNotPublishedMsg: the registry answered that the image or tag does not
// exist.
func isNotPublishedMsg(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "manifest unknown") || strings.Contains(m, "not found") || strings.Contains(m, "name unknown")
}

// matchVersion makes a release build run only an image of its own version:
// the hobbs inside the image (the proxy, the toolkit, the entry point's
// helpers) and the launcher must agree. A development build runs any
// image. An image without the label is accepted unless it is the published
// one (published), which always carries it.
func matchVersion(ref, have string, published bool) error {
	want := release.version
	if !IsReleaseVersion(want) || have == want {
		return nil
	}
	if have == "" {
		if !published {
			return nil
		}
		return errs.Failf("image %s carries no hobbs version (label %s); this hobbs is %s", ref, LabelVersion, want).
			Advise(Unversioned, "image", ref)
	}
	e := errs.Failf("image %s is hobbs %s, this hobbs is %s: the two must be the same version", ref, have, want)
	own := release.repo + ":" + want
	switch c, ok := compareVersions(have, want); {
	case !ok:
		return e.Advise(DevImage, "have", have, "image", ref, "own", own)
	case c < 0 && published:
		return e.Advise(OlderPublished, "image", ref)
	case c < 0:
		return e.Advise(OlderImage, "own", own, "have", have)
	default:
		return e.Advise(NewerImage, "have", have, "own", own)
	}
}

// compareVersions compares two release versions by their numbers (a
// pre-release sorts before its release); ok=false when either is not a
// release version.
func compareVersions(a, b string) (int, bool) {
	ma, mb := releaseRe.FindStringSubmatch(a), releaseRe.FindStringSubmatch(b)
	if ma == nil || mb == nil {
		return 0, false
	}
	for i := 1; i <= 3; i++ {
		x, _ := strconv.Atoi(ma[i])
		y, _ := strconv.Atoi(mb[i])
		if x != y {
			if x < y {
				return -1, true
			}
			return 1, true
		}
	}
	switch {
	case ma[4] == mb[4]:
		return 0, true
	case ma[4] == "":
		return 1, true
	case mb[4] == "":
		return -1, true
	case ma[5] != mb[5]: // alpha < beta < rc
		return strings.Compare(ma[5], mb[5]), true
	}
	x, _ := strconv.Atoi(strings.TrimPrefix(ma[6], "."))
	y, _ := strconv.Atoi(strings.TrimPrefix(mb[6], "."))
	switch {
	case x < y:
		return -1, true
	case x > y:
		return 1, true
	}
	return 0, true
}
