package runner

import (
	"testing"

	"github.com/hobbs-agent/hobbs/src/config"
)

// hobbs run's runtime is its launcher's: it tunes the garbage collector
// for one session (launcher.Runtime.Launcher).
func TestRuntimeIsALaunchers(t *testing.T) {
	if rt := (Runner{Config: config.Default()}).Runtime(SessionOptions{}); !rt.Launcher {
		t.Error("hobbs run's runtime is not a launcher's")
	}
}
