package launcher

import (
	"os"
	"testing"

	"github.com/hobbs-agent/hobbs/src/engine"
	"github.com/hobbs-agent/hobbs/src/engine/enginetest"
	"github.com/hobbs-agent/hobbs/src/tooltest"
)

// TestMain keeps what the package's tests write to the state and cache
// directories (session notes and logs, workspace claims, binary digests)
// out of the user's.
func TestMain(m *testing.M) { os.Exit(tooltest.Main(m, "hobbs-launcher-test-")) }

// scriptEngine is a FAKE docker CLI running body (enginetest.Script).
func scriptEngine(t *testing.T, body string) (engine.CLI, func() []string) {
	t.Helper()
	return enginetest.Script(t, body)
}
