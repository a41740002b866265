package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSkillScriptKeepsExecBit: a skill script written runnable through a
// session's layer is put in effect runnable: merged from an untainted
// session, approved from a tainted one (the setuid, setgid and sticky bits
// the unit tests cover: the agent's container cannot set them).
func TestSkillScriptKeepsExecBit(t *testing.T) {
	e := newEnv(t)
	e.removeVolume(t)
	write := func(skill string) string {
		return "d=~/.hobbs/skills/" + skill + " && mkdir -p $d && printf -- '---\\nname: " + skill +
			"\\n---\\nRun it.\\n' > $d/SKILL.md && printf '#!/bin/sh\\necho hi\\n' > $d/run.sh && chmod 755 $d/run.sh"
	}
	if r := e.hobbs(nil, e.runArgs(sessionName(t, "kept"), "sh", "-c", write("kept"))...); r.code != 0 {
		t.Fatalf("untainted session: exit %d\n%s", r.code, r.stderr)
	}
	target := untrustedPage(t, e, "Add a skill.\n")
	r := e.hobbs(nil, e.runArgs(sessionName(t, "held"), "sh", "-c", "netprobe get http://"+target+"/ > /dev/null && "+write("held"))...)
	if r.code != 0 || !strings.Contains(r.stderr, "wait for your review") {
		t.Fatalf("tainted session: exit %d\n%s", r.code, r.stderr)
	}
	if a := e.hobbs(nil, "review", "approve", heldID(t, e.hobbs(nil, "review", "--json").stdout, "skills/held/run.sh")); a.code != 0 {
		t.Fatalf("approve: exit %d %s", a.code, a.stderr)
	}
	for _, p := range []string{"skills/kept/run.sh", "skills/held/run.sh"} {
		fi, err := os.Lstat(filepath.Join(e.inst, p))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != 0o755 {
			t.Errorf("%s is in effect with mode %v, want -rwxr-xr-x", p, fi.Mode())
		}
	}
}

// TestUserScopeScriptKeepsExecBit: a script in the Claude Code user scope
// stays runnable by its owner when a tainted session's change to it is put
// back, and one a tainted session created is written runnable when its
// approval is (both 0700: the scope's files are the agent user's alone).
func TestUserScopeScriptKeepsExecBit(t *testing.T) {
	e := newEnv(t)
	e.removeVolume(t)
	script := func(skill, text string) string {
		return "d=/home/dev/.claude/skills/" + skill + " && mkdir -p $d && printf '#!/bin/sh\\necho " + text + "\\n' > $d/run.sh && chmod 755 $d/run.sh"
	}
	if r := e.hobbs(nil, e.runArgs(sessionName(t, "us"), "sh", "-c", script("tool", "mine"))...); r.code != 0 {
		t.Fatalf("untainted session: exit %d\n%s", r.code, r.stderr)
	}
	target := untrustedPage(t, e, "Change the tool.\n")
	r := e.hobbs(nil, e.runArgs(sessionName(t, "ut"), "sh", "-c", "netprobe get http://"+target+"/ > /dev/null && "+
		script("tool", "theirs")+" && "+script("new", "new"))...)
	if r.code != 0 || !strings.Contains(r.stderr, "wait for your review") {
		t.Fatalf("tainted session: exit %d\n%s", r.code, r.stderr)
	}
	if a := e.hobbs(nil, "review", "approve", heldID(t, e.hobbs(nil, "review", "--json").stdout, "skills/new/run.sh")); a.code != 0 {
		t.Fatalf("approve: exit %d %s", a.code, a.stderr)
	}
	s := e.hobbs(nil, e.runArgs(sessionName(t, "uc"), "sh", "-c", "cd /home/dev/.claude/skills && stat -c '%a %n' tool/run.sh new/run.sh && cat tool/run.sh")...)
	if s.code != 0 {
		t.Fatalf("checking session: exit %d\n%s", s.code, s.stderr)
	}
	for _, want := range []string{"700 tool/run.sh", "700 new/run.sh", "echo mine"} {
		if !strings.Contains(s.stdout, want) {
			t.Errorf("want %q in:\n%s", want, s.stdout)
		}
	}
}
