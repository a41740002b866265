package serve

import (
	"os"
	"strings"
	"testing"
)

// Never silent: a backup that failed reaches the owner through the
// service's delivery, once.
func TestWatchDeliversAFailedBackup(t *testing.T) {
	f := newFixture(t, "0s")
	s := f.service()
	s.watchOnce()
	if len(f.ch.notices) != 0 {
		t.Fatalf("notices without a backup record: %+v", f.ch.notices)
	}
	rec := `{"repo": "sftp:nas:/srv/hobbs", "device": "laptop",
 "last_ok": {"time": "2026-11-20T03:00:00Z", "snapshot": "abcd1234"},
 "last": {"time": "2026-11-26T03:00:00Z", "error": "cannot reach the repository sftp:nas:/srv/hobbs"}}`
	if err := os.WriteFile(f.in.BackupState(), []byte(rec), 0o600); err != nil {
		t.Fatal(err)
	}
	s.watchOnce()
	s.watchOnce()
	if len(f.ch.notices) != 1 {
		t.Fatalf("notices %+v, want the failed backup once", f.ch.notices)
	}
	if n := f.ch.notices[0]; !strings.HasPrefix(n.ID, "backup:failed:") || !strings.Contains(n.Text, "cannot reach the repository sftp:nas:/srv/hobbs") {
		t.Errorf("the notice: %+v", n)
	}
}
