package instance

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/safefile"
	"github.com/hobbs-agent/hobbs/src/tooltest"
)

// A directory of the layout moved aside and replaced by a link to it (an
// older Hobbs mounted the whole instance into the agent's container): init
// refuses to create anything through it, and the target is unchanged.
func TestInitRefusesLinkedDirectories(t *testing.T) {
	in := Instance{Root: filepath.Join(t.TempDir(), "h")}
	if _, err := Init(in, InitOptions{Templates: tpl}); err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(t.TempDir(), "agents")
	if err := os.Rename(in.Agents(), moved); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(moved, "hobbs", "operational.md"))
	if err := os.Symlink(moved, in.Agents()); err != nil {
		t.Fatal(err)
	}
	_, err := Init(in, InitOptions{Templates: tpl})
	if !errors.Is(err, safefile.ErrUnsafe) || !strings.Contains(err.Error(), in.Agents()+" is a symbolic link") {
		t.Fatalf("init through a linked agents/: %v", err)
	}
	if _, err := os.Stat(filepath.Join(moved, "hobbs", "operational.md")); err == nil {
		t.Fatal("init created a file through the link")
	}
}

// init --git keeps only a .git it made: one it did not make (a directory, a
// link, a gitdir file) is refused, naming it, and none of its config runs.
func TestInitGitRefusesForeignRepository(t *testing.T) {
	git := tooltest.Need(t, "git")
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("HOME", t.TempDir())
	in := Instance{Root: filepath.Join(t.TempDir(), "h")}
	if _, err := Init(in, InitOptions{Templates: tpl}); err != nil {
		t.Fatal(err)
	}
	ran := filepath.Join(t.TempDir(), "ran")
	for _, args := range [][]string{{"init", "--quiet", in.Root}, {"-C", in.Root, "config", "core.fsmonitor", "touch " + ran}} {
		if out, err := exec.Command(git, args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	refused := func(what string) {
		t.Helper()
		_, err := Init(in, InitOptions{Templates: tpl, Git: true})
		if err == nil || !strings.Contains(err.Error(), in.path(".git")+" exists but hobbs init --git did not create it") ||
			errs.AdviceOf(err).Kind != ForeignGit || errs.AdviceOf(err).Facts["root"] != in.Root {
			t.Fatalf("%s: %v (advice %+v)", what, err, errs.AdviceOf(err))
		}
	}
	refused("a .git hobbs did not make")
	if _, err := os.Stat(ran); err == nil {
		t.Fatal("the planted core.fsmonitor ran")
	}
	os.RemoveAll(in.path(".git"))
	res, err := Init(in, InitOptions{Templates: tpl, Git: true})
	if err != nil || res.Git != "initialised git repository" {
		t.Fatalf("fresh: %+v %v", res, err)
	}
	if res, err = Init(in, InitOptions{Templates: tpl, Git: true}); err != nil || res.Git != "already a git repository" {
		t.Fatalf("again: %+v %v", res, err)
	}
	other := filepath.Join(t.TempDir(), "other")
	if err := os.Rename(in.path(".git"), other); err != nil {
		t.Fatal(err)
	}
	os.Symlink(other, in.path(".git"))
	refused("a .git link")
	os.Remove(in.path(".git"))
	os.WriteFile(in.path(".git"), []byte("gitdir: "+other+"\n"), 0o644)
	refused("a gitdir file")
}
