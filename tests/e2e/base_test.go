package e2e

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// makeBase builds the test base image offline: Debian's busybox-static
// (apt-get download, cached), a root filesystem with its applet links,
// /etc/passwd, the fake claude and netprobe, imported with `docker import`. The tag
// carries a hash of the inputs, so later runs reuse it.
func makeBase(netprobe string) (string, error) {
	cache := os.Getenv("HOBBS_E2E_CACHE")
	if cache == "" {
		c, err := os.UserCacheDir()
		if err != nil {
			c = os.TempDir()
		}
		cache = filepath.Join(c, "hobbs-e2e")
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	deb, err := busyboxDeb(cache)
	if err != nil {
		return "", err
	}
	fake, err := os.ReadFile("fake-claude.sh")
	if err != nil {
		return "", err
	}
	probe, err := os.ReadFile(netprobe)
	if err != nil {
		return "", err
	}
	debData, err := os.ReadFile(deb)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write(debData)
	h.Write(fake)
	h.Write(probe)
	h.Write([]byte(passwd + group + "v1"))
	tag := "hobbs-e2e-base:" + hex.EncodeToString(h.Sum(nil))[:16]
	if exec.Command("docker", "image", "inspect", tag).Run() == nil {
		return tag, nil
	}
	x, err := os.MkdirTemp("", "hobbs-e2e-deb-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(x)
	if out, err := exec.Command("dpkg-deb", "-x", deb, x).CombinedOutput(); err != nil {
		return "", fmt.Errorf("dpkg-deb -x: %v\n%s", err, out)
	}
	bb := filepath.Join(x, "bin", "busybox")
	list, err := exec.Command(bb, "--list").Output()
	if err != nil {
		return "", fmt.Errorf("busybox --list: %v", err)
	}
	bin, err := os.ReadFile(bb)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(name string, mode int64) {
		_ = tw.WriteHeader(&tar.Header{Name: name + "/", Mode: mode, Typeflag: tar.TypeDir})
	}
	file := func(name string, mode int64, data []byte) {
		_ = tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(data)), Typeflag: tar.TypeReg})
		_, _ = tw.Write(data)
	}
	for _, d := range []string{"bin", "etc", "home", "root", "usr", "usr/bin", "usr/local", "usr/local/bin", "run", "var", "proc", "sys", "dev"} {
		dir(d, 0o755)
	}
	dir("tmp", 0o1777)
	file("bin/busybox", 0o755, bin)
	applets := strings.Fields(string(list))
	sort.Strings(applets)
	for _, a := range applets {
		if a == "busybox" {
			continue
		}
		_ = tw.WriteHeader(&tar.Header{Name: "bin/" + a, Linkname: "busybox", Typeflag: tar.TypeSymlink, Mode: 0o777})
	}
	file("etc/passwd", 0o644, []byte(passwd))
	file("etc/group", 0o644, []byte(group))
	file("usr/local/bin/claude", 0o755, fake)
	file("usr/local/bin/netprobe", 0o755, probe)
	if err := tw.Close(); err != nil {
		return "", err
	}
	imp := exec.Command("docker", "import", "--change", "ENV PATH=/usr/local/bin:/usr/bin:/bin", "-", tag)
	imp.Stdin = &buf
	if out, err := imp.CombinedOutput(); err != nil {
		return "", fmt.Errorf("docker import: %v\n%s", err, out)
	}
	return tag, nil
}

const passwd = "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"
const group = "root:x:0:\nnogroup:x:65534:\n"

// busyboxDeb returns the cached busybox-static .deb, downloading it with
// apt-get (after apt-get update when the package lists are empty).
func busyboxDeb(cache string) (string, error) {
	find := func() string {
		m, _ := filepath.Glob(filepath.Join(cache, "busybox-static_*.deb"))
		sort.Strings(m)
		if len(m) > 0 {
			return m[len(m)-1]
		}
		return ""
	}
	if p := find(); p != "" {
		return p, nil
	}
	dl := func() ([]byte, error) {
		c := exec.Command("apt-get", "download", "busybox-static")
		c.Dir = cache
		return c.CombinedOutput()
	}
	if _, err := dl(); err != nil {
		if uout, uerr := exec.Command("apt-get", "update", "-qq").CombinedOutput(); uerr != nil {
			return "", fmt.Errorf("apt-get update: %v\n%s", uerr, uout)
		}
		if out, err := dl(); err != nil {
			return "", fmt.Errorf("apt-get download busybox-static: %v\n%s", err, out)
		}
	}
	if p := find(); p != "" {
		return p, nil
	}
	return "", fmt.Errorf("apt-get download left no .deb in %s", cache)
}
