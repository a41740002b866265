package image

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hobbs-agent/hobbs/src/tooltest"
)

func TestParseInst(t *testing.T) {
	out := []byte(`NOTE: This is only a simulation!
Reading package lists...
Inst libc6 (2.36-9+deb12u14 Debian:12.15/oldstable [amd64]) []
Inst zlib1g [1:1.2.13.dfsg-1] (1:1.2.13.dfsg-2 Debian:12.15/oldstable [amd64])
Inst busybox-static (1:1.35.0-4+deb12u1+b1 Debian:12.11/stable [amd64])
Inst git-man (1:2.39.5-0+deb12u2 Debian:12.11/stable [all])
Inst libgcc-s1:amd64 (12.2.0-14+deb12u1 Debian:12.11/stable [amd64])
Conf libc6 (2.36-9+deb12u10 Debian:12.11/stable [amd64])
`)
	var got []string
	list, ok := parseInst(out)
	for _, i := range list {
		got = append(got, i.file())
	}
	want := []string{"libc6_2.36-9+deb12u14_amd64.deb", "zlib1g_1%3a1.2.13.dfsg-2_amd64.deb", "busybox-static_1%3a1.35.0-4+deb12u1+b1_amd64.deb",
		"git-man_1%3a2.39.5-0+deb12u2_all.deb", "libgcc-s1_12.2.0-14+deb12u1_amd64.deb"}
	if !slices.Equal(got, want) || !ok {
		t.Errorf("parseInst: %v %v\nwant %v", got, ok, want)
	}
	if _, ok := parseInst([]byte("Inst something new\n")); ok {
		t.Error("an Inst line not understood passes")
	}
}

// The base from Debian has every tool of dist/Dockerfile.runtime that
// Debian packages: all of its apt-get install list but npm (Claude Code's
// registry client, only of use with that registry).
func TestDebianBaseHasTheRuntimeTools(t *testing.T) {
	b, err := os.ReadFile("../../dist/Dockerfile.runtime")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)apt-get install -y --no-install-recommends \\\n(.*?)\n && `).FindSubmatch(b)
	if m == nil {
		t.Fatal("no apt-get install in dist/Dockerfile.runtime")
	}
	for _, p := range strings.Fields(strings.ReplaceAll(string(m[1]), "\\", " ")) {
		if p != "npm" && !slices.Contains(DebianBasePackages, p) {
			t.Errorf("dist/Dockerfile.runtime installs %s; DebianBasePackages does not", p)
		}
	}
}

// mkdeb builds a .deb of name holding files (path → content; content
// "->target" makes a symbolic link).
func mkdeb(t *testing.T, name string, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	ctl := "Package: " + name + "\nVersion: 1.0\nArchitecture: all\nMaintainer: test <t@example.org>\nDescription: test\n"
	files["DEBIAN/control"] = ctl
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(c, "->"); ok {
			if err := os.Symlink(target, full); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	deb := dir + ".deb"
	if out, err := exec.Command("dpkg-deb", "--root-owner-group", "--build", dir, deb).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb --build: %v\n%s", err, out)
	}
	return deb
}

// WriteRootFS: the packages' files owned by root, the first package to
// have a path gives it, the caller's files win and get their directories,
// and the CA bundle is made from the packages' certificates.
func TestWriteRootFS(t *testing.T) {
	tooltest.Need(t, "dpkg-deb")
	a := mkdeb(t, "a", map[string]string{"bin/dash": "#dash", "bin/sh": "->dash", "etc/passwd": "pkg's passwd\n",
		"usr/share/ca-certificates/mozilla/B.crt": "CERT B\n", "usr/share/ca-certificates/mozilla/A.crt": "CERT A"})
	b := mkdeb(t, "b", map[string]string{"bin/dash": "#other dash", "usr/bin/tool": "tool",
		"usr/share/doc/b/copyright": "GPL", "usr/share/doc/b/changelog.gz": "x", "usr/share/man/man1/tool.1.gz": "x"})
	var buf bytes.Buffer
	files := []BaseFile{{Path: "etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0::/root:/bin/sh\n")},
		{Path: "usr/local/bin/claude", Mode: 0o755, Data: []byte("#!/bin/sh\n")}, {Path: "tmp", Dir: true, Mode: 0o1777},
		{Path: "bin/ls", Link: "busybox"}}
	if err := WriteRootFS(context.Background(), &buf, []string{a, b}, files); err != nil {
		t.Fatal(err)
	}
	got := map[string]*tar.Header{}
	data := map[string]string{}
	tr := tar.NewReader(&buf)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, dup := got[h.Name]; dup {
			t.Errorf("%s twice", h.Name)
		}
		got[h.Name] = h
		d, _ := io.ReadAll(tr)
		data[h.Name] = string(d)
		if h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s owned by %d:%d", h.Name, h.Uid, h.Gid)
		}
	}
	for name, want := range map[string]string{"bin/dash": "#dash", "etc/passwd": "root:x:0:0::/root:/bin/sh\n",
		"usr/bin/tool": "tool", "usr/local/bin/claude": "#!/bin/sh\n", "usr/share/doc/b/copyright": "GPL",
		"etc/ssl/certs/ca-certificates.crt": "CERT A\nCERT B\n"} {
		if data[name] != want {
			t.Errorf("%s: %q, want %q", name, data[name], want)
		}
	}
	if h := got["bin/sh"]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "dash" {
		t.Errorf("bin/sh: %+v", h)
	}
	if h := got["bin/ls"]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "busybox" {
		t.Errorf("bin/ls: %+v", h)
	}
	for _, slim := range []string{"usr/share/doc/b/changelog.gz", "usr/share/man/man1/tool.1.gz", "usr/share/man/"} {
		if got[slim] != nil {
			t.Errorf("%s is in a slim root filesystem", slim)
		}
	}
	if h := got["tmp/"]; h == nil || h.Mode != 0o1777 {
		t.Errorf("tmp: %+v", h)
	}
	for _, dir := range []string{"usr/local/", "usr/local/bin/", "etc/ssl/", "etc/ssl/certs/"} {
		if h := got[dir]; h == nil || h.Typeflag != tar.TypeDir {
			t.Errorf("no directory %s", dir)
		}
	}
}
