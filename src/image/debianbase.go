package image

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/adrg/xdg"

	"github.com/hobbs-agent/hobbs/src/engine"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/plan"
	"github.com/hobbs-agent/hobbs/src/style"
)

// A runtime base from Debian packages (hobbs build --base-from-debian):
// where the internet is limited to a Debian package mirror, apt on this
// machine downloads the packages the base needs, with everything they
// depend on, from the machine's own sources; their files become a root
// filesystem that the engine imports as an image. No Dockerfile, no
// registry, no package is installed on the machine. Maintainer scripts do
// not run: what the base needs of them (/etc/passwd and /etc/group, the CA
// bundle) is written here. Claude Code is not among Debian's packages: it
// comes only from its own registry (npm), so such a base has everything
// but claude. The end-to-end tests make their base the same way.

// DebianBasePackages are the packages of a base made from Debian: a shell
// and its basic tools, and the tools of dist/Dockerfile.runtime that Debian
// packages (all of them but npm; a test keeps the two in step).
var DebianBasePackages = []string{
	"base-files", "bash", "dash", "coreutils", "debianutils", "diffutils", "findutils", "grep", "gzip", "mawk",
	"ncurses-base", "sed", "tar",
	"ca-certificates", "curl", "git", "gh", "ripgrep", "jq", "sqlite3", "tini", "less", "procps", "nodejs",
}

// DebianBaseOptions configure BuildDebianBase.
type DebianBaseOptions struct {
	Engine   engine.CLI
	Tag      string    // the image to make (the runtime base's name)
	Packages []string  // default DebianBasePackages
	CacheDir string    // where the packages are kept; default $XDG_CACHE_HOME/hobbs/debian
	Progress io.Writer // status lines
}

// BuildDebianBase makes the runtime base opt.Tag from Debian packages. The
// base has no Claude Code: the caller says so to the user.
func BuildDebianBase(ctx context.Context, opt DebianBaseOptions) (*Result, error) {
	t0 := time.Now()
	if opt.Packages == nil {
		opt.Packages = DebianBasePackages
	}
	if opt.CacheDir == "" {
		opt.CacheDir = filepath.Join(xdg.CacheHome, "hobbs", "debian")
	}
	for _, tool := range []string{"apt-get", "dpkg-deb", "dpkg"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, errs.Missingf("%s not found: a base from Debian packages is made with apt and dpkg (Debian, Ubuntu)", tool).
				Advise(NoApt)
		}
	}
	arch, err := debianArch(ctx)
	if err != nil {
		return nil, err
	}
	if ea, err := EngineArch(ctx, opt.Engine); err != nil {
		return nil, err
	} else if ea != arch {
		return nil, errs.Usagef("this machine's packages are for %s, the engine runs %s", arch, ea).
			Advise(ArchMismatch)
	}
	fmt.Fprintf(opt.Progress, "resolving %s with apt (this machine's package sources)\n", style.N(len(opt.Packages), "Debian package", "Debian packages"))
	debs, err := DebianDebs(ctx, opt.CacheDir, opt.Packages, opt.Progress)
	if err != nil {
		return nil, err
	}
	files := []BaseFile{
		{Path: "etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")},
		{Path: "etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnogroup:x:65534:\n")},
		{Path: "tmp", Dir: true, Mode: 0o1777}, {Path: "var/tmp", Dir: true, Mode: 0o1777},
		{Path: "root", Dir: true, Mode: 0o700}, {Path: "home", Dir: true, Mode: 0o755}, {Path: "run", Dir: true, Mode: 0o755},
	}
	changes := []string{"ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		fmt.Sprintf("LABEL %s=%s %s=%s", plan.LabelRole, RoleRuntime, LabelUser, BuildUser())}
	fmt.Fprintf(opt.Progress, "importing their files as %s\n", opt.Tag)
	if err := ImportRootFS(ctx, opt.Engine, opt.Tag, debs, files, changes); err != nil {
		return nil, err
	}
	fmt.Fprintf(opt.Progress, "built runtime base %s from %s in %s\n", opt.Tag, style.N(len(debs), "Debian package", "Debian packages"),
		time.Since(t0).Round(100*time.Millisecond))
	return &Result{Image: opt.Tag, Built: true}, nil
}

// BuildFromDebian is BuildDebianBase for hobbs build --base-from-debian:
// the runtime base opt.Base, made from DebianBasePackages.
func BuildFromDebian(ctx context.Context, opt BuildOptions) (*Result, error) {
	return BuildDebianBase(ctx, DebianBaseOptions{Engine: opt.Engine, Tag: opt.Base, Progress: opt.Progress})
}

// debianArch is the architecture of this machine's Debian packages.
func debianArch(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "dpkg", "--print-architecture").Output()
	if err != nil {
		return "", errs.Wrap(errs.Failure, err, "dpkg --print-architecture")
	}
	return strings.TrimSpace(string(out)), nil
}

// DebianDebs downloads pkgs and every package they depend on (not those
// they recommend) with apt, from this machine's package sources, into
// cacheDir, and returns the files, one per package. apt resolves them
// against an empty package database of cacheDir's (nothing counts as
// installed), as for an empty root filesystem; packages already in
// cacheDir are not downloaded again. It needs no root: apt runs without
// locks, on files of cacheDir only.
func DebianDebs(ctx context.Context, cacheDir string, pkgs []string, progress io.Writer) ([]string, error) {
	archives := filepath.Join(cacheDir, "archives")
	if err := os.MkdirAll(filepath.Join(archives, "partial"), 0o755); err != nil {
		return nil, errs.Wrap(errs.Failure, err, "package cache")
	}
	status := filepath.Join(cacheDir, "status")
	if err := os.WriteFile(status, nil, 0o644); err != nil {
		return nil, errs.Wrap(errs.Failure, err, "package cache")
	}
	opts := []string{"-q", "-o", "Dir::State::status=" + status, "-o", "Dir::Cache::archives=" + archives,
		"-o", "Dir::Cache=" + filepath.Join(cacheDir, "apt"), "-o", "Debug::NoLocking=1",
		"-o", "APT::Install-Recommends=false", "-o", "APT::Install-Suggests=false"}
	apt := func(args ...string) ([]byte, error) {
		c := exec.CommandContext(ctx, "apt-get", append(append(append([]string{}, opts...), args...), pkgs...)...)
		c.Env = append(os.Environ(), "LC_ALL=C", "DEBIAN_FRONTEND=noninteractive")
		out, err := c.CombinedOutput()
		if err != nil && ctx.Err() != nil {
			return out, &errs.Error{Code: errs.Interrupted, Msg: "apt-get: interrupted"}
		}
		if err != nil {
			e := &errs.Error{Code: errs.Failure, Msg: fmt.Sprintf("apt-get %s: %s", args[len(args)-1], lastLines(out, 5))}
			if bytes.Contains(out, []byte("Unable to locate package")) || bytes.Contains(out, []byte("has no installation candidate")) {
				e.Advice = errs.NewAdvice(AptUnknownPackages)
			} else {
				e.Advice = errs.NewAdvice(AptFailed)
			}
			return out, e
		}
		return out, nil
	}
	sim, err := apt("--simulate", "install")
	if err != nil {
		return nil, err
	}
	insts, ok := parseInst(sim)
	if !ok {
		return nil, errs.Failf("apt-get --simulate: a line of its answer is not understood: %s", lastLines(sim, 3))
	}
	var files, missing []string
	for _, inst := range insts {
		p := filepath.Join(archives, inst.file())
		files = append(files, p)
		if _, err := os.Stat(p); err != nil {
			missing = append(missing, inst.name)
		}
	}
	if len(files) == 0 {
		return nil, errs.Failf("apt resolved no packages for %s", strings.Join(pkgs, " "))
	}
	fmt.Fprintf(progress, "%s, %d to download into %s\n", style.N(len(files), "package", "packages"), len(missing), archives)
	if len(missing) > 0 {
		if _, err := apt("--download-only", "-y", "install"); err != nil {
			return nil, err
		}
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			return nil, errs.Failf("apt left no %s in %s", filepath.Base(f), archives)
		}
	}
	return files, nil
}

// aptInst is a package apt would install: an "Inst" line of its
// simulation, "Inst NAME (VERSION SOURCES [ARCH])".
type aptInst struct{ name, version, arch string }

// file is the name apt gives the package's file in its archives: NAME_
// VERSION_ARCH.deb, the version's ':' written %3a.
func (i aptInst) file() string {
	return i.name + "_" + strings.ReplaceAll(i.version, ":", "%3a") + "_" + i.arch + ".deb"
}

// instRe matches an Inst line: the name (libc6:amd64 on a multi-arch
// machine), an installed version in brackets (none here), then the version
// and, last in the parentheses, the architecture; apt may append "[]".
var instRe = regexp.MustCompile(`^Inst ([^\s:]+)(?::\S+)? (?:\[[^\]]*\] )?\((\S+) [^()]*\[([^\]]+)\]\)`)

// parseInst is the packages of apt's simulation, and whether every Inst
// line was understood.
func parseInst(out []byte) ([]aptInst, bool) {
	var list []aptInst
	ok := true
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if !strings.HasPrefix(sc.Text(), "Inst ") {
			continue
		}
		m := instRe.FindStringSubmatch(sc.Text())
		if m == nil {
			ok = false
			continue
		}
		list = append(list, aptInst{name: m[1], version: m[2], arch: m[3]})
	}
	return list, ok
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "; ")
}

// BaseFile is a file, directory or symbolic link a root filesystem gets
// besides its packages' files (and instead of a package's at that path).
type BaseFile struct {
	Path string // relative, slash-separated: "etc/passwd"
	Mode int64
	Data []byte
	Link string // a symbolic link's target
	Dir  bool
}

// ImportRootFS makes image tag from a root filesystem: the files of the
// packages debs (in order; the first package to have a path gives it),
// then files, all owned by root, with changes (Dockerfile instructions:
// ENV, LABEL) applied by the engine's import.
func ImportRootFS(ctx context.Context, e engine.CLI, tag string, debs []string, files []BaseFile, changes []string) error {
	args := []string{"import"}
	for _, c := range changes {
		args = append(args, "--change", c)
	}
	c, err := e.Command(ctx, nil, append(args, "-", tag)...)
	if err != nil {
		return err
	}
	pr, pw := io.Pipe()
	c.Stdin = pr
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	werr := make(chan error, 1)
	go func() {
		err := WriteRootFS(ctx, pw, debs, files)
		pw.CloseWithError(err)
		werr <- err
	}()
	err = c.Run()
	pr.Close()
	if wErr := <-werr; wErr != nil && !errors.Is(wErr, io.ErrClosedPipe) {
		return wErr
	}
	if err != nil {
		if ctx.Err() != nil {
			return &errs.Error{Code: errs.Interrupted, Msg: e.Bin + " import: interrupted"}
		}
		return e.CallError("import", strings.TrimSpace(out.String()))
	}
	return nil
}

// WriteRootFS writes to w, as a tar archive, the root filesystem
// ImportRootFS imports. The CA bundle (etc/ssl/certs/ca-certificates.crt,
// which ca-certificates makes when installed) is made from the
// certificates the packages hold, and each file of files gets the
// directories above it.
func WriteRootFS(ctx context.Context, w io.Writer, debs []string, files []BaseFile) error {
	tw := tar.NewWriter(w)
	ours := map[string]bool{}
	for _, f := range files {
		ours[path.Clean(f.Path)] = true
	}
	seen := map[string]bool{}
	var certs []string
	certData := map[string][]byte{}
	for _, deb := range debs {
		c := exec.CommandContext(ctx, "dpkg-deb", "--fsys-tarfile", deb)
		var stderr bytes.Buffer
		c.Stderr = &stderr
		r, err := c.StdoutPipe()
		if err != nil {
			return err
		}
		if err := c.Start(); err != nil {
			return errs.Wrap(errs.Failure, err, "dpkg-deb")
		}
		err = copyDeb(tw, tar.NewReader(r), ours, seen, func(name string, data []byte) {
			certs = append(certs, name)
			certData[name] = data
		})
		_, _ = io.Copy(io.Discard, r)
		if werr := c.Wait(); err == nil && werr != nil {
			err = fmt.Errorf("%v: %s", werr, strings.TrimSpace(stderr.String()))
		}
		if err != nil {
			return errs.Wrap(errs.Failure, err, "read %s", filepath.Base(deb))
		}
	}
	const bundle = "etc/ssl/certs/ca-certificates.crt"
	if len(certs) > 0 && !ours[bundle] && !seen[bundle] {
		sort.Strings(certs)
		var b bytes.Buffer
		for _, name := range certs {
			b.Write(certData[name])
			if !bytes.HasSuffix(certData[name], []byte("\n")) {
				b.WriteByte('\n')
			}
		}
		files = append(files, BaseFile{Path: bundle, Mode: 0o644, Data: b.Bytes()})
	}
	for _, f := range files {
		p := path.Clean(f.Path)
		for dir := path.Dir(p); dir != "." && dir != "/"; dir = path.Dir(dir) {
			if !seen[dir] && !ours[dir] {
				seen[dir] = true
				if err := tw.WriteHeader(&tar.Header{Name: dir + "/", Mode: 0o755, Typeflag: tar.TypeDir}); err != nil {
					return err
				}
			}
		}
		h := &tar.Header{Name: p, Mode: f.Mode, Typeflag: tar.TypeReg, Size: int64(len(f.Data))}
		switch {
		case f.Dir:
			h.Name, h.Typeflag, h.Size = p+"/", tar.TypeDir, 0
		case f.Link != "":
			h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, f.Link, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(f.Data); err != nil {
				return err
			}
		}
	}
	return tw.Close()
}

// slimmed reports whether a package's path is left out of the root
// filesystem, as Debian's slim images leave it out: manual pages, info
// pages and documentation, but for each package's copyright.
func slimmed(name string, typ byte) bool {
	for _, dir := range []string{"usr/share/man", "usr/share/info"} {
		if name == dir || strings.HasPrefix(name, dir+"/") {
			return true
		}
	}
	rest, ok := strings.CutPrefix(name, "usr/share/doc/")
	if !ok {
		return false
	}
	pkg, file, nested := strings.Cut(rest, "/")
	return !(typ == tar.TypeDir && !nested && pkg != "") && file != "copyright"
}

// copyDeb copies a package's files from tr to tw, owned by root, but for
// paths in skip (the caller's files) and paths already written (seen);
// cert gets each CA certificate of ca-certificates.
func copyDeb(tw *tar.Writer, tr *tar.Reader, skip, seen map[string]bool, cert func(name string, data []byte)) error {
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "./"))
		if name == "." || name == "/" || strings.HasPrefix(name, "../") || skip[name] || seen[name] || slimmed(name, h.Typeflag) {
			continue
		}
		seen[name] = true
		h.Name = name
		if h.Typeflag == tar.TypeDir {
			h.Name += "/"
		}
		if h.Typeflag == tar.TypeLink {
			h.Linkname = path.Clean(strings.TrimPrefix(h.Linkname, "./"))
		}
		h.Uid, h.Gid, h.Uname, h.Gname = 0, 0, "root", "root"
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		if strings.HasPrefix(name, "usr/share/ca-certificates/") && strings.HasSuffix(name, ".crt") && h.Size < 1<<20 {
			data, err := io.ReadAll(tr)
			if err != nil {
				return err
			}
			cert(name, data)
			if _, err := tw.Write(data); err != nil {
				return err
			}
			continue
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return err
		}
	}
}
