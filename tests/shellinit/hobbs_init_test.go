// Package shellinit tests src/shell.d/hobbs-init.sh, the container's shell
// start-up script, by running the embedded copy (what the image ships) with
// every POSIX shell available here, in a temporary HOME laid out like the
// container's /home/dev, with the framework's managed directory
// (/etc/claude-code/.claude in the image) at $HOME/fw.
package shellinit

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/hobbs-agent/hobbs"
)

// shells are the interpreters the script must work with; sh is required.
func shells(t *testing.T) []string {
	var out []string
	for _, s := range []string{"sh", "bash", "dash", "busybox"} {
		if p, err := exec.LookPath(s); err == nil {
			if s == "busybox" {
				p += " sh"
			}
			out = append(out, p)
		} else if s == "sh" {
			t.Fatal("no sh on PATH")
		}
	}
	return out
}

type env struct {
	t      *testing.T
	shell  string
	home   string
	script string
	vars   []string
}

func newEnv(t *testing.T, shell string) *env {
	t.Helper()
	home := t.TempDir()
	data, err := hobbs.Assets.(interface{ ReadFile(string) ([]byte, error) }).ReadFile("src/shell.d/hobbs-init.sh")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "hobbs-init.sh")
	if err := os.WriteFile(script, data, 0o644); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, shell: shell, home: home, script: script}
	e.vars = []string{"HOBBS_FRAMEWORK_DIR=" + e.p("fw")}
	e.mkdir(".hobbs/skills", ".hobbs/agents/custom", "hobbs/workspace", "fw/skills", "fw/agents", ".claude")
	return e
}

func (e *env) p(rel string) string { return filepath.Join(e.home, rel) }

func (e *env) mkdir(rels ...string) {
	for _, r := range rels {
		if err := os.MkdirAll(e.p(r), 0o755); err != nil {
			e.t.Fatal(err)
		}
	}
}

func (e *env) write(rel, content string) {
	e.mkdir(filepath.Dir(rel))
	if err := os.WriteFile(e.p(rel), []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) skill(rel string) { e.write(rel+"/SKILL.md", "---\nname: x\n---\n") }

// run runs the script (sourced, as a profile does) and returns stdout and
// stderr.
func (e *env) run(extra ...string) (string, string) {
	e.t.Helper()
	args := strings.Fields(e.shell)
	args = append(args, "-c", `. "$1"`, "hobbs-init", e.script)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append([]string{"HOME=" + e.home, "PATH=" + os.Getenv("PATH")}, e.vars...)
	cmd.Env = append(cmd.Env, extra...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		e.t.Fatalf("%s: %v\nstderr:\n%s", e.shell, err, errb.String())
	}
	return out.String(), errb.String()
}

func (e *env) link(rel string) string {
	e.t.Helper()
	t, err := os.Readlink(e.p(rel))
	if err != nil {
		e.t.Fatalf("%s: not a link: %v", rel, err)
	}
	return t
}

func (e *env) notLink(rel string) {
	e.t.Helper()
	if fi, err := os.Lstat(e.p(rel)); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		e.t.Fatalf("%s is a link", rel)
	}
}

// tree lists every path under home (or under the given directory below it)
// with its kind and link target, to prove a run changed nothing there.
func (e *env) tree(sub ...string) string {
	var lines []string
	root := e.p(filepath.Join(sub...))
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		l := strings.TrimPrefix(p, e.home) + " " + fi.Mode().String()
		if fi.Mode()&os.ModeSymlink != 0 {
			t, _ := os.Readlink(p)
			l += " -> " + t
		}
		lines = append(lines, l)
		return nil
	})
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func wantLines(t *testing.T, got string, want ...string) {
	t.Helper()
	g := strings.Split(strings.TrimSpace(got), "\n")
	if strings.TrimSpace(got) == "" {
		g = nil
	}
	sort.Strings(g)
	sort.Strings(want)
	if strings.Join(g, "\n") != strings.Join(want, "\n") {
		t.Fatalf("stderr:\n%s\nwant:\n%s", strings.Join(g, "\n"), strings.Join(want, "\n"))
	}
}

// TestLinksAndIsIdempotent: instance skills and agents are linked into the
// user scope (CLAUDE_CONFIG_DIR); the workspace is never written.
func TestLinksAndIsIdempotent(t *testing.T) {
	for _, sh := range shells(t) {
		t.Run(filepath.Base(strings.Fields(sh)[0]), func(t *testing.T) {
			e := newEnv(t, sh)
			e.skill(".hobbs/skills/taxes")
			e.skill(".hobbs/skills/garden")
			e.write(".hobbs/skills/README.md", "not a skill")
			e.write(".hobbs/agents/custom/bookkeeper.md", "---\nname: bookkeeper\n---\n")
			e.write(".hobbs/agents/custom/notes.txt", "ignored")
			e.mkdir("hobbs/workspace/.git")
			wsBefore := e.tree("hobbs/workspace")

			out, errOut := e.run()
			if out != "" {
				t.Fatalf("stdout: %q", out)
			}
			sk := e.p(".claude/skills")
			wantLines(t, errOut,
				"hobbs-init: linked skill garden ("+sk+"/garden)",
				"hobbs-init: linked skill taxes ("+sk+"/taxes)",
				"hobbs-init: linked agent bookkeeper ("+e.p(".claude/agents/bookkeeper.md")+")")
			if got := e.link(".claude/skills/taxes"); got != e.p(".hobbs/skills/taxes") {
				t.Fatalf("taxes -> %s", got)
			}
			if got := e.link(".claude/agents/bookkeeper.md"); got != e.p(".hobbs/agents/custom/bookkeeper.md") {
				t.Fatalf("bookkeeper -> %s", got)
			}
			if _, err := os.Lstat(e.p(".claude/skills/README.md")); err == nil {
				t.Fatal("a file was linked as a skill")
			}
			if _, err := os.Lstat(e.p(".claude/agents/notes.txt")); err == nil {
				t.Fatal("a non-.md file was linked as an agent")
			}
			// The skill is reachable through the link.
			if _, err := os.Stat(filepath.Join(sk, "taxes", "SKILL.md")); err != nil {
				t.Fatal(err)
			}
			if after := e.tree("hobbs/workspace"); after != wsBefore {
				t.Fatalf("the workspace changed:\n%s\n---\n%s", wsBefore, after)
			}

			// Second run: silent, nothing changes.
			before := e.tree()
			out, errOut = e.run()
			if out != "" || errOut != "" {
				t.Fatalf("second run not silent: stdout %q stderr %q", out, errOut)
			}
			if after := e.tree(); after != before {
				t.Fatalf("second run changed the tree:\n%s\n---\n%s", before, after)
			}

			// A removed skill's link goes; a new one comes.
			os.RemoveAll(e.p(".hobbs/skills/garden"))
			e.skill(".hobbs/skills/recipes")
			_, errOut = e.run()
			wantLines(t, errOut,
				"hobbs-init: unlinked skill garden: "+e.p(".hobbs/skills/garden")+" is gone",
				"hobbs-init: linked skill recipes ("+sk+"/recipes)")
			if _, err := os.Lstat(filepath.Join(sk, "garden")); err == nil {
				t.Fatal("dangling link kept")
			}
		})
	}
}

func TestNeverClobbersAndWarnsOnCollisions(t *testing.T) {
	for _, sh := range shells(t) {
		t.Run(filepath.Base(strings.Fields(sh)[0]), func(t *testing.T) {
			e := newEnv(t, sh)
			sk := ".claude/skills/"
			// Instance skills and agents.
			for _, s := range []string{"mine", "theirs", "real", "capture-playbook", "ok"} {
				e.skill(".hobbs/skills/" + s)
			}
			e.write(".hobbs/agents/custom/reviewer.md", "agent")
			e.write(".hobbs/agents/custom/mine.md", "agent")
			// A real directory and someone else's link where links would go.
			e.skill(sk + "real")
			e.write("elsewhere/SKILL.md", "other")
			if err := os.Symlink(e.p("elsewhere"), e.p(sk+"theirs")); err != nil {
				t.Fatal(err)
			}
			e.write(".claude/agents/mine.md", "the user's own agent file")
			// A skill and an agent named like framework ones.
			e.skill("fw/skills/capture-playbook")
			e.write("fw/agents/reviewer.md", "framework agent")
			// A dangling link that is not ours stays.
			if err := os.Symlink("/nonexistent/x", e.p(sk+"ghost")); err != nil {
				t.Fatal(err)
			}
			// A name the script will not handle.
			e.skill(".hobbs/skills/bad name")

			warnings := []string{
				"hobbs-init: " + e.p(sk+"real") + " exists and is not a link; not replaced (move it to link " + e.p(".hobbs/skills/real") + ")",
				"hobbs-init: " + e.p(sk+"theirs") + " is a link to " + e.p("elsewhere") + ", not Hobbs's; not replaced",
				"hobbs-init: skill capture-playbook in " + e.p(".hobbs/skills") + " has the name of a framework skill (" + e.p("fw/skills/capture-playbook") + "); not linked, rename yours",
				"hobbs-init: agent reviewer in " + e.p(".hobbs/agents/custom") + " has the name of a framework agent (" + e.p("fw/agents/reviewer.md") + "); not linked, rename yours",
				"hobbs-init: " + e.p(".claude/agents/mine.md") + " exists and is not a link; not replaced (move it to link " + e.p(".hobbs/agents/custom/mine.md") + ")",
				"hobbs-init: skill \"bad name\" in " + e.p(".hobbs/skills") + ": name has characters other than letters, digits, '.', '_', '-'; not linked",
			}
			_, errOut := e.run()
			wantLines(t, errOut, append([]string{
				"hobbs-init: linked skill mine (" + e.p(sk+"mine") + ")",
				"hobbs-init: linked skill ok (" + e.p(sk+"ok") + ")",
			}, warnings...)...)
			e.notLink(sk + "real")
			if got := e.link(sk + "theirs"); got != e.p("elsewhere") {
				t.Fatalf("someone else's link replaced: %s", got)
			}
			e.notLink(".claude/agents/mine.md")
			if b, _ := os.ReadFile(e.p(".claude/agents/mine.md")); string(b) != "the user's own agent file" {
				t.Fatal("user's agent file changed")
			}
			for _, p := range []string{sk + "capture-playbook", ".claude/agents/reviewer.md"} {
				if _, err := os.Lstat(e.p(p)); err == nil {
					t.Fatalf("%s: a name of the framework's was linked", p)
				}
			}
			if got := e.link(sk + "ghost"); got != "/nonexistent/x" {
				t.Fatal("a foreign dangling link was removed")
			}

			// Second run: the same warnings, no changes.
			before := e.tree()
			_, errOut = e.run()
			wantLines(t, errOut, warnings...)
			if after := e.tree(); after != before {
				t.Fatalf("second run changed the tree:\n%s\n---\n%s", before, after)
			}

			// A framework skill that appears later takes over from our link.
			e.skill("fw/skills/ok")
			_, errOut = e.run()
			if !strings.Contains(errOut, "hobbs-init: unlinked skill ok: the framework has one of the same name\n") {
				t.Fatalf("stderr:\n%s", errOut)
			}
			if _, err := os.Lstat(e.p(sk + "ok")); err == nil {
				t.Fatal("link kept beside the framework skill")
			}
		})
	}
}

// TestOldFrameworkAgentLinksGo: older images linked the framework agents
// from ~/hobbs/.claude/agents into the user scope; that directory is gone,
// and so are the links. Other dangling links stay.
func TestOldFrameworkAgentLinksGo(t *testing.T) {
	for _, sh := range shells(t) {
		t.Run(filepath.Base(strings.Fields(sh)[0]), func(t *testing.T) {
			e := newEnv(t, sh)
			e.mkdir(".claude/agents")
			old := e.p("hobbs/.claude/agents/researcher.md")
			if err := os.Symlink(old, e.p(".claude/agents/researcher.md")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("/nonexistent/x.md", e.p(".claude/agents/ghost.md")); err != nil {
				t.Fatal(err)
			}
			_, errOut := e.run()
			wantLines(t, errOut, "hobbs-init: unlinked agent researcher.md: "+old+" is gone")
			if _, err := os.Lstat(e.p(".claude/agents/researcher.md")); err == nil {
				t.Fatal("the old framework link was kept")
			}
			if got := e.link(".claude/agents/ghost.md"); got != "/nonexistent/x.md" {
				t.Fatal("a foreign dangling link was removed")
			}
		})
	}
}

func TestEnvironmentOverridesAndNoLeaks(t *testing.T) {
	for _, sh := range shells(t) {
		t.Run(filepath.Base(strings.Fields(sh)[0]), func(t *testing.T) {
			e := newEnv(t, sh)
			inst, fw, cl := e.p("inst"), e.p("fw2"), e.p("claude")
			e.skill("inst/skills/one")
			e.write("inst/agents/custom/two.md", "a")
			e.skill("fw2/skills/three")
			e.skill("inst/skills/three")
			e.vars = []string{"HOBBS_HOME=" + inst, "HOBBS_FRAMEWORK_DIR=" + fw, "CLAUDE_CONFIG_DIR=" + cl}
			e.run()
			if got := e.link("claude/skills/one"); got != filepath.Join(inst, "skills", "one") {
				t.Fatal(got)
			}
			if got := e.link("claude/agents/two.md"); got != filepath.Join(inst, "agents", "custom", "two.md") {
				t.Fatal(got)
			}
			if _, err := os.Lstat(e.p("claude/skills/three")); err == nil {
				t.Fatal("HOBBS_FRAMEWORK_DIR ignored: a framework name was linked")
			}
			// The default places were not touched.
			if _, err := os.Lstat(e.p(".claude/skills")); err == nil {
				t.Fatal("default user scope used despite CLAUDE_CONFIG_DIR")
			}

			// Sourced under set -eu it neither exits the shell nor leaves names behind.
			args := strings.Fields(sh)
			args = append(args, "-euc", `. "$1"; for v in home framework claude kind src dest fw suffix p d t name; do eval "[ -z \"\${$v+x}\" ]" || echo "leaked $v"; done; command -v _hobbs_init >/dev/null && echo leaked function; command -v link_all >/dev/null && echo leaked link_all; command -v unlink_gone >/dev/null && echo leaked unlink_gone; echo alive`, "x", e.script)
			cmd := exec.Command(args[0], args[1:]...)
			cmd.Env = append([]string{"HOME=" + e.home, "PATH=" + os.Getenv("PATH")}, e.vars...)
			out, err := cmd.Output() // stdout: the collision of "three" is warned on stderr
			if err != nil || strings.TrimSpace(string(out)) != "alive" {
				t.Fatalf("%v: %s", err, out)
			}
		})
	}
}

func TestMissingPlacesAreQuiet(t *testing.T) {
	e := newEnv(t, shells(t)[0])
	// No instance skills or agents at all: nothing to say, nothing made.
	os.RemoveAll(e.p(".hobbs"))
	os.RemoveAll(e.p(".claude"))
	if _, errOut := e.run(); errOut != "" {
		t.Fatalf("stderr: %q", errOut)
	}
	if _, err := os.Lstat(e.p(".claude")); err == nil {
		t.Fatal("the user scope was made without an instance")
	}
	// An instance with empty skills/ and agents/custom/: the user-scope
	// directories are made (Claude Code watches them from its start), quietly.
	e.mkdir(".hobbs/skills", ".hobbs/agents/custom")
	if _, errOut := e.run(); errOut != "" {
		t.Fatalf("stderr: %q", errOut)
	}
	for _, d := range []string{".claude/skills", ".claude/agents"} {
		if fi, err := os.Stat(e.p(d)); err != nil || !fi.IsDir() {
			t.Fatalf("%s not made: %v", d, err)
		}
	}
	// The whole skills directory linked to the instance's is accepted.
	e.skill(".hobbs/skills/one")
	os.RemoveAll(e.p(".claude/skills"))
	if err := os.Symlink(e.p(".hobbs/skills"), e.p(".claude/skills")); err != nil {
		t.Fatal(err)
	}
	if _, errOut := e.run(); errOut != "" {
		t.Fatalf("stderr: %q", errOut)
	}
	if _, err := os.Lstat(e.p(".hobbs/skills/one/one")); err == nil {
		t.Fatal("linked into the instance through the directory link")
	}
}

// TestRunLinksOnlyItsApprovedCopies: in a headless run of an approved
// playbook (HOBBS_RUN_ASSETS) the approved copies are linked, and no
// skill or agent of the instance's shares, named or not.
func TestRunLinksOnlyItsApprovedCopies(t *testing.T) {
	for _, sh := range shells(t) {
		t.Run(filepath.Base(strings.Fields(sh)[0]), func(t *testing.T) {
			e := newEnv(t, sh)
			e.skill(".hobbs/skills/taxes")
			e.skill(".hobbs/skills/garden")
			e.write(".hobbs/agents/custom/bookkeeper.md", "---\nname: bookkeeper\n---\n")
			e.skill("run/skills/taxes")
			e.write("run/agents/bookkeeper.md", "---\nname: bookkeeper\n---\n")
			_, errOut := e.run("HOBBS_RUN_ASSETS=" + e.p("run"))
			wantLines(t, errOut,
				"hobbs-init: linked skill taxes ("+e.p(".claude/skills/taxes")+")",
				"hobbs-init: linked agent bookkeeper ("+e.p(".claude/agents/bookkeeper.md")+")")
			if got := e.link(".claude/skills/taxes"); got != e.p("run/skills/taxes") {
				t.Fatalf("taxes -> %s, want the run's copy", got)
			}
			if got := e.link(".claude/agents/bookkeeper.md"); got != e.p("run/agents/bookkeeper.md") {
				t.Fatalf("bookkeeper -> %s, want the run's copy", got)
			}
			if _, err := os.Lstat(e.p(".claude/skills/garden")); err == nil {
				t.Fatal("a skill the run does not name was linked")
			}
		})
	}
}
