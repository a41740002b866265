package launcher

import (
	"os"
	"testing"

	"github.com/adrg/xdg"

	"github.com/hobbs-agent/hobbs/src/engine"
	"github.com/hobbs-agent/hobbs/src/engine/enginetest"
)

// TestMain keeps what the package's tests write to the state and cache
// directories (session notes and logs, workspace claims, binary digests)
// out of the user's.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hobbs-launcher-test-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_STATE_HOME", dir)
	os.Setenv("XDG_CACHE_HOME", dir)
	xdg.Reload()
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// scriptEngine is a FAKE docker CLI running body (enginetest.Script).
func scriptEngine(t *testing.T, body string) (engine.CLI, func() []string) {
	t.Helper()
	return enginetest.Script(t, body)
}
