package launcher

import (
	"runtime/debug"
	"testing"
)

// hobbs run's launcher collects garbage less often, unless GOGC says how.
func TestLauncherGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOGC", "")
	launcherGC()
	if got := debug.SetGCPercent(100); got != 400 {
		t.Errorf("GC percent %d, want 400", got)
	}
	t.Setenv("GOGC", "50")
	launcherGC()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC set: GC percent %d, want it left", got)
	}
}
