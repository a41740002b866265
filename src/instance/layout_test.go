package instance

import (
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
)

func TestResolvePrecedence(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", "/x/data")
	t.Setenv(EnvHome, "")
	in, err := Resolve("")
	if err != nil || in.Root != "/x/data/hobbs" {
		t.Fatalf("xdg: %v %v", in.Root, err)
	}
	t.Setenv(EnvHome, "/h")
	if in, _ = Resolve(""); in.Root != "/h" {
		t.Fatalf("HOBBS_HOME: %v", in.Root)
	}
	if in, _ = Resolve("/flag"); in.Root != "/flag" {
		t.Fatalf("flag: %v", in.Root)
	}
}

var tpl = fstest.MapFS{
	"foundation.md":  {Data: []byte("# F\n\n## Core Values\n\n<!-- x -->\n\n## Principles\n\n<!-- y -->\n")},
	"config.yaml":    {Data: []byte("image: \"\"\n")},
	"claude.md":      {Data: []byte("c")},
	"policy.yaml":    {Data: []byte("services: []\n")},
	"operational.md": {Data: []byte("o")},
	"gitignore":      {Data: []byte("vault/keys/\n")},
}

func TestInitIdempotentAndModes(t *testing.T) {
	in := Instance{Root: filepath.Join(t.TempDir(), "h")}
	res, err := Init(in, InitOptions{Templates: tpl})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Created) != len(Layout()) || len(res.Kept) != 0 {
		t.Fatalf("first run: %+v", res)
	}
	for _, e := range Layout() {
		fi, err := os.Stat(in.Path(e))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != e.Mode || fi.IsDir() != e.Dir {
			t.Errorf("%s: %v, want %v dir=%v", e.Rel, fi.Mode(), e.Mode, e.Dir)
		}
	}
	os.WriteFile(in.Foundation(), []byte("mine"), 0o644)
	res, err = Init(in, InitOptions{Templates: tpl, Foundation: func([]byte) ([]byte, error) {
		t.Fatal("asked to co-create an existing foundation")
		return nil, nil
	}})
	if err != nil || len(res.Created) != 0 {
		t.Fatalf("second run: %+v %v", res, err)
	}
	if b, _ := os.ReadFile(in.Foundation()); string(b) != "mine" {
		t.Fatalf("foundation overwritten: %q", b)
	}
}
