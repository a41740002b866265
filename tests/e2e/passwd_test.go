package e2e

import (
	"strconv"
	"strings"
	"testing"
)

// TestSessionUserHasName: the session's uid (the test user's; in CI one
// with no passwd entry anywhere) has a name inside the container, so that
// shells do not say "I have no name!" and id -un answers; the image's
// other entries stay.
func TestSessionUserHasName(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.removeVolume(t)
	r := e.hobbs(nil, e.runArgs(sessionName(t, "passwd"), "sh", "-c", `echo "name=$(id -un)"; grep -c '^root:' /etc/passwd; grep ":$(id -u):" /etc/passwd`)...)
	t.Logf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	if r.code != 0 || !strings.Contains(r.stdout, "name=") || strings.Contains(r.stdout, "name=\n") || !strings.Contains(r.stdout, "\n1\n") {
		t.Fatalf("the session's user has no name: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, ":"+strconv.Itoa(testUID)+":"+strconv.Itoa(testGID)+":") {
		t.Errorf("no passwd entry for uid %d", testUID)
	}
}
