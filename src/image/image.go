package image

import (
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"

	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/engine"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/plan"
)

// EnvBinary names a static linux hobbs binary to put in the image when the
// running one is not suitable (macOS host, dynamically linked build).
const EnvBinary = "HOBBS_BINARY"

// BuildOptions configure Build and Ensure.
type BuildOptions struct {
	Engine   engine.CLI
	Assets   fs.FS     // the embedded tree: dist/, templates/, src/agents, src/skills, src/shell.d
	Base     string    // runtime base image (FROM)
	Tag      string    // image to produce; "" means DefaultImage()
	Binary   string    // explicit binary (--binary / HOBBS_BINARY); "" = this executable
	Progress io.Writer // build progress and status lines
	Verbose  bool      // the builder's whole output on Progress, not a line per step
	// Brief: where Progress is not a terminal, no line per step (a build
	// on the way to a run, whose output is the session's): the build's
	// start and end lines only.
	Brief bool
}

// Defaults fills what o leaves empty from cfg: the runtime base
// (base_image), the image to build (what hobbs run uses; none for the
// runtime base itself, which Tag names only when given) and the binary
// ($HOBBS_BINARY).
func (o *BuildOptions) Defaults(cfg *config.Config, runtime bool) {
	if o.Base == "" {
		o.Base = cfg.BaseImage
	}
	if o.Tag == "" && !runtime {
		o.Tag = ImageRef(cfg.Image)
	}
	if o.Binary == "" {
		o.Binary = os.Getenv(EnvBinary)
	}
}

func (o *BuildOptions) tag() string {
	if o.Tag == "" {
		return DefaultImage()
	}
	return o.Tag
}

// DefaultImage is the image hobbs run uses and hobbs build builds when
// config.yaml names none. A release build runs its published image
// (PublishedImage: <repository>:<version>), pulled when missing. A
// development build runs hobbs:local-<version>, built locally, where the
// version identifies this hobbs binary: binaries of different builds (two
// users, an old and a new install) thus never replace each other's image on
// a shared engine; the same binary builds the same image from the same base.
func DefaultImage() string {
	if ref := PublishedImage(); ref != "" {
		return ref
	}
	defaultOnce.Do(func() { defaultImage = "hobbs:local-" + binaryVersion() })
	return defaultImage
}

var (
	defaultOnce  sync.Once
	defaultImage string
)

// binaryVersion names this executable's build: a hash of its Go build id
// (a hash of the binary's content that the linker records, read without
// reading the whole file), else of its content, else "dev".
func binaryVersion() string {
	self, err := os.Executable()
	if err != nil {
		return "dev"
	}
	return versionOf(self)
}

// versionOf is binaryVersion for the executable at self.
func versionOf(self string) string {
	h := sha256.New()
	if id := goBuildID(self); id != "" {
		h.Write([]byte(id))
	} else {
		f, err := os.Open(self)
		if err != nil {
			return "dev"
		}
		defer f.Close()
		if _, err := io.Copy(h, f); err != nil {
			return "dev"
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// goBuildID returns the Go build id an ELF executable carries in its
// .note.go.buildid note, or "".
func goBuildID(p string) string {
	f, err := elf.Open(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	s := f.Section(".note.go.buildid")
	if s == nil {
		return ""
	}
	b, err := s.Data()
	if err != nil || len(b) < 16 {
		return ""
	}
	// namesz, descsz, type, then the name "Go\x00\x00" and the id.
	bo := f.ByteOrder
	namesz, descsz := bo.Uint32(b[0:]), bo.Uint32(b[4:])
	if namesz != 4 || string(b[12:14]) != "Go" || uint64(len(b)) < 16+uint64(descsz) {
		return ""
	}
	return string(b[16 : 16+descsz])
}

// FindBinary picks the hobbs binary for the image: explicit if given, else
// this executable when it is a static linux binary for arch.
func FindBinary(explicit, arch string) (string, error) {
	if explicit != "" {
		if err := checkBinary(explicit, arch); err != nil {
			return "", errs.Wrap(errs.Usage, err, "binary %s", explicit)
		}
		return explicit, nil
	}
	self, err := os.Executable()
	if err == nil {
		if err = checkBinary(self, arch); err == nil {
			return self, nil
		}
	}
	return "", errs.Missingf("no static linux/%s hobbs binary to put in the image (this one: %v)", arch, err).
		Advise(NoStaticBinary, "arch", arch, "env", EnvBinary)
}

// checkBinary accepts a statically linked linux ELF executable for arch.
func checkBinary(p, arch string) error {
	f, err := elf.Open(p)
	if err != nil {
		return fmt.Errorf("not a linux executable: %w", err)
	}
	defer f.Close()
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "386": elf.EM_386, "arm": elf.EM_ARM,
		"riscv64": elf.EM_RISCV, "ppc64le": elf.EM_PPC64, "s390x": elf.EM_S390}[arch]
	if want == 0 || f.Machine != want {
		return fmt.Errorf("built for %v, the engine runs %s", f.Machine, arch)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("dynamically linked (build with CGO_ENABLED=0)")
		}
	}
	return nil
}

// EngineArch is the architecture containers run on: this process's when it
// runs on Linux (the engine is local), else the engine server's.
func EngineArch(ctx context.Context, e engine.CLI) (string, error) {
	if runtime.GOOS == "linux" && os.Getenv("DOCKER_HOST") == "" {
		return runtime.GOARCH, nil
	}
	a, err := e.Output(ctx, "version", "--format", "{{.Server.Arch}}")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(a), nil
}

// inputs describe one build: its hash and how to write the context.
type inputs struct {
	assets fs.FS
	binary string
	base   string
	baseID string
	hash   string
	oldID  string // the Hobbs image the build replaces under its tag
}

// localDigest hashes what the image takes from this side: every asset
// (path, mode, content) and the binary (its digest: binaryDigest). It is
// computed while the engine is asked about the base image (inputsHash
// joins the two).
func localDigest(assets fs.FS, binary string) ([]byte, error) {
	h := sha256.New()
	err := fs.WalkDir(assets, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(assets, p)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "file %s %d\n", p, len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "hash embedded assets")
	}
	sum, err := binaryDigest(binary)
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "read binary")
	}
	fmt.Fprintf(h, "binary %x\n", sum)
	return h.Sum(nil), nil
}

// inputsHash is the image's inputs label: the local digest and the base
// image's name and id.
func inputsHash(local []byte, base, baseID string) string {
	h := sha256.Sum256(fmt.Appendf(nil, "hobbs-image-v2\nbase %s %s\nlocal %x\n", base, baseID, local))
	return hex.EncodeToString(h[:])[:32]
}

// writeContext writes the build context to dir: the assets at their
// repository paths and the binary as ./hobbs.
func writeContext(dir string, assets fs.FS, binary string) error {
	err := fs.WalkDir(assets, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(p))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := fs.ReadFile(assets, p)
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(p, ".sh") || path.Base(p) == "claude" {
			mode = 0o755
		}
		return os.WriteFile(dst, b, mode)
	})
	if err != nil {
		return errs.Wrap(errs.Failure, err, "write build context")
	}
	if binary == "" {
		return nil
	}
	src, err := os.Open(binary)
	if err != nil {
		return errs.Wrap(errs.Failure, err, "read binary")
	}
	defer src.Close()
	dst, err := os.OpenFile(filepath.Join(dir, "hobbs"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return errs.Wrap(errs.Failure, err, "write build context")
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return errs.Wrap(errs.Failure, err, "write build context")
	}
	return dst.Close()
}

// imageID returns the id of ref, or a Missing error naming how to get it.
func imageID(ctx context.Context, e engine.CLI, ref string) (string, error) {
	out, err := e.Output(ctx, "image", "inspect", "--format", "{{.Id}}", ref)
	if err != nil {
		if engine.IsNotFound(err) {
			return "", MissingBase(e, ref)
		}
		return "", err
	}
	return out, nil
}

// DefaultBase is the runtime base `hobbs build --runtime` makes when
// config.yaml's base_image is left as it is.
var DefaultBase = config.Default().BaseImage

// MissingBase is the error of a runtime base image the engine does not
// have. Only the default base is one a runtime build makes
// (NoDefaultBase); any other name is an image to pull, load or spell
// right (NoBase).
func MissingBase(e engine.CLI, ref string) *errs.Error {
	err := errs.Missingf("runtime base image %s not found", ref)
	if ref == DefaultBase {
		return err.Advise(NoDefaultBase)
	}
	return err.Advise(NoBase, "image", ref, "engine", e.Bin, "default", DefaultBase)
}

// Result says what Build or Ensure did.
type Result struct {
	Image  string `json:"image"`
	Inputs string `json:"inputs,omitempty"`
	Built  bool   `json:"built"`
	Pulled bool   `json:"pulled,omitempty"`
	// NoClaude: the image's LabelClaude says its base has no claude.
	NoClaude bool `json:"no_claude,omitempty"`
}

// noClaude reports whether labels say the image has no claude.
func noClaude(labels map[string]string) bool {
	has, known := HasClaude(labels)
	return known && !has
}

// ImageRef is the image Ensure(ctx, ref, …) makes sure of: ref, or
// DefaultImage() when ref is empty. (A published ref that cannot be pulled
// is built locally under the same name.)
func ImageRef(ref string) string {
	if ref == "" {
		return DefaultImage()
	}
	return ref
}

// Build builds the Hobbs image unconditionally.
func Build(ctx context.Context, opt BuildOptions) (*Result, error) {
	in, err := prepare(ctx, &opt)
	if err != nil {
		return nil, err
	}
	in.oldID, err = replacedImage(ctx, opt.Engine, opt.tag())
	if err != nil {
		return nil, err
	}
	return build(ctx, &opt, in)
}

// replacedImage returns the id of the Hobbs-built image ref names now (the
// image a build under ref replaces), or "" when there is none or ref names
// an image Hobbs did not build.
func replacedImage(ctx context.Context, e engine.CLI, ref string) (string, error) {
	img, ok, err := imageInfo(ctx, e, ref)
	if err != nil || !ok || img.labels[plan.LabelRole] != RoleImage {
		return "", err
	}
	return img.id, nil
}

// removeReplaced removes the image a build replaced, once the tag names the
// new one and no other name names it (the engine would remove an image by
// id with the one name it has left). The engine refuses while a container
// uses it; it is then left for hobbs prune.
func removeReplaced(ctx context.Context, opt *BuildOptions, oldID, tag string) {
	if oldID == "" {
		return
	}
	newID, err := opt.Engine.Output(ctx, "image", "inspect", "--format", "{{.Id}}", tag)
	if err != nil || newID == oldID {
		return
	}
	if names, err := opt.Engine.Output(ctx, "image", "inspect", "--format", "{{len .RepoTags}}", oldID); err != nil || names != "0" {
		return
	}
	if _, err := opt.Engine.Output(ctx, "image", "rm", oldID); err != nil {
		fmt.Fprintf(opt.Progress, "kept the replaced image %s (%v); hobbs prune removes it once it is unused\n", shortID(oldID), err)
		return
	}
	fmt.Fprintf(opt.Progress, "removed the replaced image %s\n", shortID(oldID))
}

func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func prepare(ctx context.Context, opt *BuildOptions) (*inputs, error) {
	in, digest, err := prepareLocal(ctx, opt)
	if err != nil {
		return nil, err
	}
	baseID, err := imageID(ctx, opt.Engine, opt.Base)
	local, derr := digest()
	if err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, derr
	}
	in.baseID, in.hash = baseID, inputsHash(local, in.base, baseID)
	return in, nil
}

// prepareLocal checks the options and the binary and starts hashing them;
// digest waits for the hash.
func prepareLocal(ctx context.Context, opt *BuildOptions) (in *inputs, digest func() ([]byte, error), err error) {
	if opt.Base == "" {
		return nil, nil, errs.Usagef("no runtime base image").Advise(NoBaseNamed)
	}
	arch, err := EngineArch(ctx, opt.Engine)
	if err != nil {
		return nil, nil, err
	}
	bin, err := FindBinary(opt.Binary, arch)
	if err != nil {
		return nil, nil, err
	}
	var local []byte
	hashed := make(chan error, 1)
	go func() {
		var err error
		local, err = localDigest(opt.Assets, bin)
		hashed <- err
	}()
	return &inputs{assets: opt.Assets, binary: bin, base: opt.Base},
		func() ([]byte, error) { err := <-hashed; return local, err }, nil
}

func build(ctx context.Context, opt *BuildOptions, in *inputs) (*Result, error) {
	defer catchSIGPIPE()()
	dir, err := os.MkdirTemp("", "hobbs-build-")
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "create build context")
	}
	defer os.RemoveAll(dir)
	if err := writeContext(dir, in.assets, in.binary); err != nil {
		return nil, err
	}
	tag := opt.tag()
	fmt.Fprintf(opt.Progress, "building %s FROM %s (inputs %s)\n", tag, in.base, in.hash[:12])
	claude := claudeLabel(ctx, opt.Engine, in.base)
	args := []string{"build", "-f", filepath.Join(dir, "dist", "Dockerfile"), "--build-arg", "BASE=" + in.base,
		"--label", LabelInputs + "=" + in.hash, "--label", plan.LabelRole + "=" + RoleImage, "--label", LabelVersion + "=" + Version(),
		"--label", LabelUser + "=" + BuildUser()}
	args = append(append(args, claude...), "-t", tag, dir)
	out := newBuildLog(opt.Progress, opt.Verbose)
	out.brief = opt.Brief
	err = opt.Engine.Stream(ctx, out, buildEnv(ctx, opt.Engine), args...)
	out.finish(tag, err)
	if err != nil {
		return nil, err
	}
	removeReplaced(ctx, opt, in.oldID, tag)
	none := len(claude) == 2 && claude[1] == LabelClaude+"="+ClaudeNone
	return &Result{Image: tag, Inputs: in.hash, Built: true, NoClaude: none}, nil
}

// catchSIGPIPE makes a write to a closed stdout or stderr (hobbs build |
// head) fail with EPIPE for as long as a build runs, instead of killing the
// process, so the build stops through its error path and its deferred
// cleanup removes the build context. It returns the function that undoes it.
func catchSIGPIPE() func() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGPIPE)
	return func() { signal.Stop(c) }
}

// buildEnv selects the legacy builder when BuildKit's buildx plugin is not
// installed: the docker CLI otherwise refuses to build.
func buildEnv(ctx context.Context, e engine.CLI) []string {
	if e.IsPodman() || os.Getenv("DOCKER_BUILDKIT") != "" {
		return nil
	}
	if _, err := e.Output(ctx, "buildx", "version"); err != nil {
		return []string{"DOCKER_BUILDKIT=0"}
	}
	return nil
}

// BuildRuntime builds dist/Dockerfile.runtime (Debian, Node, Claude Code
// and tools; needs the internet) as tag.
func BuildRuntime(ctx context.Context, opt BuildOptions) (*Result, error) {
	defer catchSIGPIPE()()
	if err := checkOnline(ctx); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "hobbs-build-")
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "create build context")
	}
	defer os.RemoveAll(dir)
	if err := writeContext(dir, opt.Assets, ""); err != nil {
		return nil, err
	}
	fmt.Fprintf(opt.Progress, "building runtime base %s\n", opt.Base)
	args := []string{"build", "-f", filepath.Join(dir, "dist", "Dockerfile.runtime"),
		"--label", plan.LabelRole + "=" + RoleRuntime, "--label", LabelUser + "=" + BuildUser(), "-t", opt.Base, dir}
	out := newBuildLog(opt.Progress, opt.Verbose)
	err = opt.Engine.Stream(ctx, out, buildEnv(ctx, opt.Engine), args...)
	out.finish("runtime base "+opt.Base, err)
	if err != nil {
		if e, ok := err.(*errs.Error); ok && e.Code == errs.Failure && e.Advice.IsZero() {
			e.Advice = errs.NewAdvice(Offline)
		}
		return nil, err
	}
	return &Result{Image: opt.Base, Built: true}, nil
}

// Ensure makes sure the image to run exists and is current.
//
// "" is DefaultImage: for a release build its published image, used as it
// is when present, else pulled, never built (ensurePublished). Another
// registry reference (its first component names a host: ghcr.io/…,
// localhost:5000/…) is a published image too: used as it is when present,
// else pulled, else built under that name. Any other name is a local
// build: built when missing or when its inputs hash differs from the
// current inputs, else used without a build step. Plain names are never
// pulled, so a local build never contacts a registry. A release build runs
// only an image of its own version (matchVersion).
func Ensure(ctx context.Context, ref string, opt BuildOptions) (*Result, error) {
	if ref == "" && PublishedImage() != "" {
		return ensurePublished(ctx, PublishedImage(), opt)
	}
	if IsRegistryRef(ref) {
		img, ok, err := imageInfo(ctx, opt.Engine, ref)
		if err != nil {
			return nil, err
		}
		if ok {
			return &Result{Image: ref, NoClaude: noClaude(img.labels)}, matchVersion(ref, img.labels[LabelVersion], false)
		}
		err = pull(ctx, opt, ref, false)
		if err == nil {
			if img, _, err = imageInfo(ctx, opt.Engine, ref); err == nil {
				err = matchVersion(ref, img.labels[LabelVersion], false)
			}
			return &Result{Image: ref, Pulled: true, NoClaude: noClaude(img.labels)}, err
		} else if errs.Code(err) == errs.Interrupted || engine.Unreachable(err) != nil {
			return nil, err
		}
		fmt.Fprintf(opt.Progress, "could not pull %s (%v); building it locally\n", ref, err)
	}
	opt.Tag = ref
	in, digest, err := prepareLocal(ctx, &opt)
	if err != nil {
		return nil, err
	}
	// The common case, base and image both present, takes one engine call;
	// anything else (either missing, an odd answer) the two separate ones
	// that say which.
	baseID, img, ok := inspectBaseAndImage(ctx, opt.Engine, in.base, opt.tag())
	if !ok {
		if baseID, err = imageID(ctx, opt.Engine, in.base); err == nil {
			img, ok, err = imageInfo(ctx, opt.Engine, opt.tag())
		}
	}
	have := img.labels[LabelInputs]
	imgID, hobbsBuilt := img.id, img.labels[plan.LabelRole] == RoleImage
	local, derr := digest()
	if err = errors.Join(err, derr); err != nil {
		return nil, err
	}
	in.baseID, in.hash = baseID, inputsHash(local, in.base, baseID)
	if ok && have == in.hash {
		return &Result{Image: opt.tag(), Inputs: in.hash, NoClaude: noClaude(img.labels)}, nil
	}
	if ok && hobbsBuilt {
		in.oldID = imgID
	}
	return build(ctx, &opt, in)
}

// image is what the engine says of an image: its id and labels.
type image struct {
	id     string
	labels map[string]string
}

// imageInfo inspects ref; ok=false when it does not exist. (The labels come
// as JSON: indexing the labels of an image that has none is an error in the
// engine's templates.)
func imageInfo(ctx context.Context, e engine.CLI, ref string) (image, bool, error) {
	out, err := e.Output(ctx, "image", "inspect", "--format", "{{.Id}} {{json .Config.Labels}}", ref)
	if err != nil {
		if engine.IsNotFound(err) {
			return image{}, false, nil
		}
		return image{}, false, err
	}
	img, ok := parseImage(out)
	if !ok {
		return image{}, false, errs.Failf("%s image inspect %s: unexpected answer %q", e.Bin, ref, out)
	}
	return img, true, nil
}

func parseImage(line string) (image, bool) {
	id, labels, ok := strings.Cut(line, " ")
	var l map[string]string
	if !ok || id == "" || json.Unmarshal([]byte(labels), &l) != nil {
		return image{}, false
	}
	return image{id: id, labels: l}, true
}

// inspectBaseAndImage asks the engine in one call for the base image's id
// and the image's id and labels; ok=false when either is missing or the
// answer is not the expected two lines.
func inspectBaseAndImage(ctx context.Context, e engine.CLI, base, ref string) (baseID string, img image, ok bool) {
	out, err := e.Output(ctx, "image", "inspect", "--format", "{{.Id}} {{json .Config.Labels}}", base, ref)
	if err != nil {
		return "", image{}, false
	}
	lines := strings.Split(out, "\n")
	if len(lines) != 2 {
		return "", image{}, false
	}
	b, ok1 := parseImage(lines[0])
	img, ok2 := parseImage(lines[1])
	if !ok1 || !ok2 {
		return "", image{}, false
	}
	return b.id, img, true
}

// IsRegistryRef reports whether ref names a registry host (a first path
// component with a dot or a port, or localhost).
func IsRegistryRef(ref string) bool {
	first, _, ok := strings.Cut(ref, "/")
	return ok && (strings.ContainsAny(first, ".:") || first == "localhost")
}
