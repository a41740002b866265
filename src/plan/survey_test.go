package plan

import (
	"path/filepath"
	"testing"

	"github.com/hobbs-agent/hobbs/src/errs"
)

// TestCheckSensitive: the agent may not get a workspace it could use to
// change the system or the user's keys and configuration.
func TestCheckSensitive(t *testing.T) {
	home := t.TempDir()
	for ws, refused := range map[string]bool{
		"/":                                   true,
		"/etc":                                true,
		"/etc/nginx":                          true,
		"/usr/local/src":                      true,
		"/var/www":                            true,
		"/root":                               true,
		home:                                  true,
		filepath.Dir(home):                    true,
		filepath.Join(home, ".ssh"):           true,
		filepath.Join(home, ".config", "x"):   true,
		filepath.Join(home, "hobbs-work"):     false,
		filepath.Join(home, "src", ".hidden"): false,
		"/srvx":                               false,
		"/home/someone/project":               false,
		"/tmp/work":                           false,
	} {
		err := checkSensitive(ws, home)
		if (err != nil) != refused {
			t.Errorf("%s: err %v, want refused %v", ws, err, refused)
		}
		if err != nil && errs.Code(err) != errs.Usage {
			t.Errorf("%s: exit code %d, want %d", ws, errs.Code(err), errs.Usage)
		}
	}
}
