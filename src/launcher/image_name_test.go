package launcher

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestDefaultImageNamesThisBinary: the default image is hobbs:local-<version>,
// the version naming this binary's build (its Go build id), so binaries of
// different builds never share a name; a file that is no Go ELF binary is
// named by its content.
func TestDefaultImageNamesThisBinary(t *testing.T) {
	if !regexp.MustCompile(`^hobbs:local-[0-9a-f]{12}$`).MatchString(DefaultImage()) {
		t.Fatalf("DefaultImage() = %q, want hobbs:local-<12 hex>", DefaultImage())
	}
	if ImageRef("") != DefaultImage() || ImageRef("mine:1") != "mine:1" {
		t.Errorf("ImageRef: %q, %q", ImageRef(""), ImageRef("mine:1"))
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if goBuildID(self) == "" {
		t.Errorf("no Go build id read from %s", self)
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	os.WriteFile(a, []byte("one build"), 0o755)
	os.WriteFile(b, []byte("another build"), 0o755)
	if versionOf(a) == versionOf(b) || versionOf(a) == versionOf(self) {
		t.Errorf("versions not distinct: %s %s %s", versionOf(a), versionOf(b), versionOf(self))
	}
}
