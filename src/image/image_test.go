package image

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hobbs-agent/hobbs/src/errs"
)

func TestIsRegistryRef(t *testing.T) {
	for ref, want := range map[string]bool{"": false, "hobbs:local": false, "hobbs-e2e-1:test": false, "user/hobbs:1": false,
		"ghcr.io/hobbs-agent/hobbs:1": true, "localhost:5000/hobbs": true, "localhost/hobbs": true, "registry:5000/x": true} {
		if got := IsRegistryRef(ref); got != want {
			t.Errorf("IsRegistryRef(%q) = %v", ref, got)
		}
	}
}

// hashInputs is the inputs hash as Ensure computes it.
func hashInputs(assets fs.FS, bin, base, baseID string) (*inputs, error) {
	local, err := localDigest(assets, bin)
	if err != nil {
		return nil, err
	}
	return &inputs{hash: inputsHash(local, base, baseID)}, nil
}

func TestHashInputs(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "hobbs")
	os.WriteFile(bin, []byte("binary-1"), 0o755)
	assets := fstest.MapFS{"dist/Dockerfile": {Data: []byte("FROM x")}, "src/agents/hobbs/CLAUDE.md": {Data: []byte("id")}}
	h := func() string {
		in, err := hashInputs(assets, bin, "base:1", "sha256:aa")
		if err != nil {
			t.Fatal(err)
		}
		return in.hash
	}
	h0 := h()
	if h() != h0 {
		t.Fatalf("hash not stable")
	}
	assets["src/agents/hobbs/CLAUDE.md"] = &fstest.MapFile{Data: []byte("id2")}
	h1 := h()
	os.WriteFile(bin, []byte("binary-2"), 0o755)
	h2 := h()
	in, _ := hashInputs(assets, bin, "base:1", "sha256:bb")
	in2, _ := hashInputs(assets, bin, "base:2", "sha256:bb")
	if h1 == h0 || h2 == h1 || in.hash == h2 || in2.hash == in.hash {
		t.Errorf("hash did not change with its inputs: %s %s %s %s %s", h0, h1, h2, in.hash, in2.hash)
	}
	// The context has the assets at their paths and the binary as ./hobbs.
	ctx := t.TempDir()
	if err := writeContext(ctx, assets, bin); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"dist/Dockerfile", "src/agents/hobbs/CLAUDE.md", "hobbs"} {
		if _, err := os.Stat(filepath.Join(ctx, p)); err != nil {
			t.Errorf("context lacks %s", p)
		}
	}
}

func TestFindBinary(t *testing.T) {
	dir := t.TempDir()
	notELF := filepath.Join(dir, "x")
	os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755)
	if _, err := FindBinary(notELF, "amd64"); errs.Code(err) != errs.Usage {
		t.Errorf("non-ELF accepted: %v", err)
	}
	if _, err := os.Stat("/bin/sh"); err == nil {
		if err := checkBinary("/bin/sh", "amd64"); err == nil || !strings.Contains(err.Error(), "dynamically linked") && !strings.Contains(err.Error(), "built for") {
			t.Errorf("/bin/sh accepted: %v", err)
		}
	}
	_, err := FindBinary("", "no-such-arch")
	if a := errs.AdviceOf(err); errs.Code(err) != errs.Missing || a.Kind != NoStaticBinary || a.Facts["arch"] != "no-such-arch" {
		t.Errorf("no binary: %v (advice %v)", err, a)
	}
}
