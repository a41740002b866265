package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// plantGit is what an injected agent leaves in a share: a git repository
// whose fsmonitor is a script of its own (git status runs it), and an
// .envrc for direnv.
const plantGit = `set -e
m=$HOME/.hobbs/memory/notes
mkdir -p $m/.git/objects $m/.git/refs
printf 'ref: refs/heads/main\n' > $m/.git/HEAD
printf '#!/bin/sh\ntouch "$PWD/pwned"\n' > $m/.git/hook
chmod 755 $m/.git/hook
printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = .git/hook\n' > $m/.git/config
echo 'a note' > $m/keep.md
echo 'export PATH=/tmp:$PATH' > $HOME/.hobbs/playbooks/.envrc
`

// TestSharesNeutralised: attack. A session plants a .git in memory/ whose
// fsmonitor runs the agent's script when the user runs git status there,
// and an .envrc in playbooks/. When the session ends, hobbs has moved both
// into the instance's quarantine (kept, under inert names), git status in
// memory/ runs nothing of the agent's, and hobbs doctor names them.
func TestSharesNeutralised(t *testing.T) {
	t.Parallel()
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("git not found: %v", err)
	}
	e := newEnv(t)
	r := e.hobbs(nil, e.runArgs(sessionName(t, "plant"), "sh", "-c", plantGit)...)
	t.Logf("session: exit %d\n%s", r.code, r.stderr)
	if r.code != 0 {
		t.Fatalf("session: exit %d", r.code)
	}
	notes := filepath.Join(e.inst, "memory", "notes")
	// The user, on the host, in the share: git status, as the user.
	git := exec.Command(gitBin, "status")
	git.Dir = notes
	git.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + e.home, "GIT_CEILING_DIRECTORIES=" + e.inst}
	if os.Getuid() == 0 {
		git.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(testUID), Gid: uint32(testGID)}}
	}
	out, _ := git.CombinedOutput()
	t.Logf("git status in memory/notes: %s", out)
	if exists(filepath.Join(notes, "pwned")) {
		t.Fatal("git status on the host ran the agent's fsmonitor: the planted .git is still in memory/notes")
	}
	for _, gone := range []string{filepath.Join(notes, ".git"), filepath.Join(e.inst, "playbooks", ".envrc")} {
		if _, err := os.Lstat(gone); err == nil {
			t.Errorf("%s is still in the share", gone)
		}
	}
	if !exists(filepath.Join(notes, "keep.md")) {
		t.Error("the agent's note was moved too")
	}
	if !strings.Contains(r.stderr, "moved memory/notes/.git out of the shares to quarantine/") {
		t.Errorf("the session did not say what it moved:\n%s", r.stderr)
	}
	kept, _ := filepath.Glob(filepath.Join(e.inst, "quarantine", "*", "memory", "notes", ".git.quarantined", "hook"))
	if len(kept) != 1 {
		t.Fatalf("the .git was not kept in the quarantine: %v", kept)
	}
	d := e.hobbs(nil, "doctor")
	if !strings.Contains(d.stdout, "instance.quarantine") || !strings.Contains(d.stdout, "memory/notes/.git.quarantined") ||
		!strings.Contains(d.stdout, "playbooks/.envrc.quarantined") {
		t.Errorf("doctor does not name what was moved:\n%s", d.stdout)
	}
}
