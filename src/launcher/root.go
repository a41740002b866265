package launcher

import (
	"os"

	"github.com/hobbs-agent/hobbs/src/errs"
)

// RefuseRoot refuses to start a session as root: the agent writes the
// instance and the workspace with the launcher's uid, so as root every file
// it makes on the host would be root's, and a container escape would start
// as root.
func RefuseRoot() error {
	if os.Getuid() != 0 {
		return nil
	}
	return errs.Usagef("hobbs run will not run the agent as root").Advise(AsRoot)
}
