package launcher

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/plan"
	"github.com/hobbs-agent/hobbs/src/provenance"
)

// The record's end reads the shares once the agent's container is gone,
// while the proxy is still being stopped: never before the engine has
// removed the agent, whose processes could still write. Here the FAKE
// engine refuses the agent's removal twice (the engine is removing it) and
// the agent's last write lands meanwhile; a tainted session's end must
// still hold it.
func TestSnapshotWaitsForTheAgentsRemoval(t *testing.T) {
	s := testSession(t)
	knobs(s).unlayered = true // the shares' record of a session without layers
	replan(t, s)
	late := filepath.Join(s.Instance.MemoryActive(), "late.md")
	e, calls := scriptEngine(t, `if [ "$*" = "rm -f `+s.Name+`" ]; then
	if [ ! -e `+late+` ]; then
		mkdir -p `+filepath.Dir(late)+` && printf -- '---\nid: late\n---\n\nWritten while the engine removed the agent.\n' > `+late+`
		echo "Error response from daemon: removal of container `+s.Name+` is already in progress" >&2
		exit 1
	fi
	echo "Error: No such container: `+s.Name+`" >&2
	exit 1
fi
exit 0
`)
	s.Engine = e
	made(s, "run", "egress", "proxy", "agent")
	s.Provenance = provenance.New(s.Instance.FS(), nil)
	if err := s.Provenance.Begin(s.Name, provenance.Origin{Kind: provenance.OriginTrigger, Name: "hook"}, s.owner, 0, nil); err != nil {
		t.Fatal(err)
	}
	s.began = spawn(func() error { return nil })
	if err := s.cleanup(); err != nil {
		t.Fatalf("cleanup: %v (calls %q)", err, calls())
	}
	if s.snapshot == nil || s.snapshot.wait() != nil || s.snap == nil {
		t.Fatal("cleanup took no snapshot of the shares once the agent was gone")
	}
	s.endProvenance()
	if _, err := os.Stat(late); !os.IsNotExist(err) {
		t.Fatalf("the tainted session's last write is in effect: %v", err)
	}
	items, err := s.Provenance.List(false)
	if err != nil || len(items) != 1 || items[0].Path != "memory/active/late.md" {
		t.Fatalf("waiting for review: %+v, %v", items, err)
	}
}

// What host tools act on is moved out of the shares before the record
// begins and, at the end, once the agent's container is gone and before
// the shares are read for the record: the record never sees it, and the
// owner finds it in the quarantine. Here an earlier session left a .git in
// a skill, and the agent's last write (while the FAKE engine removes its
// container) plants another.
func TestSharesNeutralisedAroundTheRecord(t *testing.T) {
	s := testSession(t)
	knobs(s).unlayered = true // the shares' record of a session without layers
	replan(t, s)
	skills := filepath.Join(s.Instance.Root, "skills")
	plant := func(skill string) string {
		return "mkdir -p " + skills + "/" + skill + "/.git && printf '[core]\\n\\tfsmonitor = x\\n' > " + skills + "/" + skill + "/.git/config"
	}
	e, calls := scriptEngine(t, `if [ "$*" = "rm -f `+s.Name+`" ]; then
	`+plant("late")+`
fi
exit 0
`)
	s.Engine = e
	made(s, "run", "egress", "proxy", "agent")
	if out, err := exec.Command("sh", "-c", plant("early")).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var order []string
	s.Neutralise = func(when string) {
		order = append(order, when)
		if _, err := s.Instance.Neutralise(when, time.Now(), nil); err != nil {
			t.Errorf("neutralise %s: %v", when, err)
		}
	}
	s.plan.Kind, s.plan.Trigger = plan.KindTrigger, "hook"
	var said []string
	s.Progress = func(f string, a ...any) { said = append(said, fmt.Sprintf(f, a...)) }
	s.Provenance = provenance.New(s.Instance.FS(), nil)
	s.began = spawn(func() error { return s.begin() })
	if err := s.began.wait(); err != nil {
		t.Fatal(err)
	}
	if err := s.cleanup(); err != nil {
		t.Fatalf("cleanup: %v (calls %q)", err, calls())
	}
	if s.snapshot == nil || s.snapshot.wait() != nil {
		t.Fatal("cleanup took no snapshot of the shares once the agent was gone")
	}
	s.endProvenance()
	s.neutraliseEnd() // what Run's end does: not a second time
	if want := []string{"start", "end"}; !slices.Equal(order, want) {
		t.Errorf("neutralised %q, want %q", order, want)
	}
	for _, skill := range []string{"early", "late"} {
		if _, err := os.Lstat(filepath.Join(skills, skill, ".git")); !os.IsNotExist(err) {
			t.Errorf("skills/%s/.git is still in the share: %v", skill, err)
		}
		if kept, _ := filepath.Glob(filepath.Join(s.Instance.Quarantine(), "*", "skills", skill, ".git.quarantined", "config")); len(kept) != 1 {
			t.Errorf("skills/%s/.git is not in the quarantine", skill)
		}
	}
	// The session was tainted (a trigger's): whatever of the .git
	// directories its record had seen would wait for review, or have been
	// put back.
	if items, err := s.Provenance.List(false); err != nil || len(items) != 0 {
		t.Fatalf("waiting for review: %+v, %v", items, err)
	}
	if len(said) != 0 {
		t.Errorf("the session's end said %q", said)
	}
}
