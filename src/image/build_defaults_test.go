package image

import (
	"testing"

	"github.com/hobbs-agent/hobbs/src/config"
)

func TestBuildDefaults(t *testing.T) {
	t.Setenv(EnvBinary, "/tmp/hobbs-linux")
	cfg := &config.Config{BaseImage: "base:1", Image: "mine:2"}
	o := BuildOptions{}
	o.Defaults(cfg, false)
	if o.Base != "base:1" || o.Tag != ImageRef("mine:2") || o.Binary != "/tmp/hobbs-linux" {
		t.Errorf("image: %+v", o)
	}
	o = BuildOptions{}
	o.Defaults(cfg, true)
	if o.Base != "base:1" || o.Tag != "" {
		t.Errorf("runtime base: %+v", o)
	}
	o = BuildOptions{Base: "b", Tag: "t", Binary: "x"}
	o.Defaults(cfg, false)
	if o.Base != "b" || o.Tag != "t" || o.Binary != "x" {
		t.Errorf("flags win: %+v", o)
	}
}
