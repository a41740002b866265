package instance

import "testing"

// The shares the host and the agent both write have their lock in their
// own directory; the others none.
func TestShareLock(t *testing.T) {
	in := Instance{Root: "/i"}
	for rel, want := range map[string]string{"memory": "/i/memory/.lock", "playbooks": "/i/playbooks/.lock",
		"agents": "/i/agents/.lock", "logs/tasks": "/i/logs/tasks/.lock", "skills": "", "data": ""} {
		got, ok := in.ShareLock(rel)
		if got != want || ok != (want != "") {
			t.Errorf("ShareLock(%s) = %q, %v; want %q", rel, got, ok, want)
		}
	}
}
