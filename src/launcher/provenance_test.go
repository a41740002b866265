package launcher

import (
	"os"
	"path/filepath"
	"testing"

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
