// Package shellinit tests src/shell.d/hobbs-init.sh, the container's shell
// start-up script, by running the embedded copy (what the image ships) with
// every POSIX shell available here, in a temporary HOME laid out like the
// container's /home/dev.
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
	e.mkdir(".hobbs/skills", ".hobbs/agents/custom", "hobbs/workspace", "hobbs/.claude/skills", ".claude")
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

// tree lists every path under home with its kind and link target, to prove a
// run changed nothing.
func (e *env) tree() string {
	var lines []string
	filepath.Walk(e.home, func(p string, fi os.FileInfo, err error) error {
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

func TestLinksAndIsIdempotent(t *testing.T) {
	for _, sh := range shells(t) {
		t.Run(filepath.Base(strings.Fields(sh)[0]), func(t *testing.T) {
			e := newEnv(t, sh)
			e.skill(".hobbs/skills/taxes")
			e.skill(".hobbs/skills/garden")
			e.write(".hobbs/skills/README.md", "not a skill")
			e.write(".hobbs/agents/custom/bookkeeper.md", "---\nname: bookkeeper\n---\n")
			e.write(".hobbs/agents/custom/notes.txt", "ignored")

			out, errOut := e.run()
			if out != "" {
				t.Fatalf("stdout: %q", out)
			}
			ws := e.p("hobbs/workspace/.claude/skills")
			wantLines(t, errOut,
				"hobbs-init: linked skill garden ("+ws+"/garden)",
				"hobbs-init: linked skill taxes ("+ws+"/taxes)",
				"hobbs-init: linked agent bookkeeper ("+e.p(".claude/agents/bookkeeper.md")+")")
			if got := e.link("hobbs/workspace/.claude/skills/taxes"); got != e.p(".hobbs/skills/taxes") {
				t.Fatalf("taxes -> %s", got)
			}
			if got := e.link(".claude/agents/bookkeeper.md"); got != e.p(".hobbs/agents/custom/bookkeeper.md") {
				t.Fatalf("bookkeeper -> %s", got)
			}
			if _, err := os.Lstat(e.p("hobbs/workspace/.claude/skills/README.md")); err == nil {
				t.Fatal("a file was linked as a skill")
			}
			if _, err := os.Lstat(e.p(".claude/agents/notes.txt")); err == nil {
				t.Fatal("a non-.md file was linked as an agent")
			}
			// The skill is reachable through the link.
			if _, err := os.Stat(filepath.Join(ws, "taxes", "SKILL.md")); err != nil {
				t.Fatal(err)
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
				"hobbs-init: linked skill recipes ("+ws+"/recipes)")
			if _, err := os.Lstat(filepath.Join(ws, "garden")); err == nil {
				t.Fatal("dangling link kept")
			}
		})
	}
}

func TestNeverClobbersAndWarnsOnCollisions(t *testing.T) {
	for _, sh := range shells(t) {
		t.Run(filepath.Base(strings.Fields(sh)[0]), func(t *testing.T) {
			e := newEnv(t, sh)
			ws := "hobbs/workspace/.claude/skills/"
			// Instance skills and agents.
			for _, s := range []string{"mine", "theirs", "real", "capture-playbook", "ok"} {
				e.skill(".hobbs/skills/" + s)
			}
			e.write(".hobbs/agents/custom/reviewer.md", "agent")
			e.write(".hobbs/agents/custom/mine.md", "agent")
			// A real directory and someone else's link where links would go.
			e.skill(ws + "real")
			e.write("elsewhere/SKILL.md", "other")
			if err := os.Symlink(e.p("elsewhere"), e.p(ws+"theirs")); err != nil {
				t.Fatal(err)
			}
			e.write(".claude/agents/mine.md", "the user's own agent file")
			// A skill and an agent named like framework ones.
			e.skill("hobbs/.claude/skills/capture-playbook")
			e.write("hobbs/.claude/agents/reviewer.md", "framework agent")
			// A dangling link that is not ours stays.
			if err := os.Symlink("/nonexistent/x", e.p(ws+"ghost")); err != nil {
				t.Fatal(err)
			}
			// A name the script will not handle.
			e.skill(".hobbs/skills/bad name")

			warnings := []string{
				"hobbs-init: " + e.p(ws+"real") + " exists and is not a link; not replaced (move it to link " + e.p(".hobbs/skills/real") + ")",
				"hobbs-init: " + e.p(ws+"theirs") + " is a link to " + e.p("elsewhere") + ", not Hobbs's; not replaced",
				"hobbs-init: skill capture-playbook in " + e.p(".hobbs/skills") + " has the name of a framework skill (" + e.p("hobbs/.claude/skills/capture-playbook") + "); not linked, rename yours",
				"hobbs-init: agent reviewer in " + e.p(".hobbs/agents/custom") + " has the name of a framework agent (" + e.p("hobbs/.claude/agents/reviewer.md") + "); not linked, rename yours",
				"hobbs-init: " + e.p(".claude/agents/mine.md") + " exists and is not a link; not replaced (move it to link " + e.p(".hobbs/agents/custom/mine.md") + ")",
				"hobbs-init: skill \"bad name\" in " + e.p(".hobbs/skills") + ": name has characters other than letters, digits, '.', '_', '-'; not linked",
			}
			_, errOut := e.run()
			wantLines(t, errOut, append([]string{
				"hobbs-init: linked skill mine (" + e.p(ws+"mine") + ")",
				"hobbs-init: linked skill ok (" + e.p(ws+"ok") + ")",
				"hobbs-init: linked agent reviewer (" + e.p(".claude/agents/reviewer.md") + ")",
			}, warnings...)...)
			e.notLink(ws + "real")
			if got := e.link(ws + "theirs"); got != e.p("elsewhere") {
				t.Fatalf("someone else's link replaced: %s", got)
			}
			e.notLink(".claude/agents/mine.md")
			if b, _ := os.ReadFile(e.p(".claude/agents/mine.md")); string(b) != "the user's own agent file" {
				t.Fatal("user's agent file changed")
			}
			if _, err := os.Lstat(e.p(ws + "capture-playbook")); err == nil {
				t.Fatal("colliding skill linked")
			}
			// The framework's reviewer is linked, the instance's namesake is not.
			if got := e.link(".claude/agents/reviewer.md"); got != e.p("hobbs/.claude/agents/reviewer.md") {
				t.Fatalf("reviewer links to %s, want the framework agent", got)
			}
			if got := e.link(ws + "ghost"); got != "/nonexistent/x" {
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
			e.skill("hobbs/.claude/skills/ok")
			_, errOut = e.run()
			if !strings.Contains(errOut, "hobbs-init: unlinked skill ok: the framework has one of the same name\n") {
				t.Fatalf("stderr:\n%s", errOut)
			}
			if _, err := os.Lstat(e.p(ws + "ok")); err == nil {
				t.Fatal("link kept beside the framework skill")
			}
		})
	}
}

func TestEnvironmentOverridesAndNoLeaks(t *testing.T) {
	for _, sh := range shells(t) {
		t.Run(filepath.Base(strings.Fields(sh)[0]), func(t *testing.T) {
			e := newEnv(t, sh)
			inst, ws, fw, cl := e.p("inst"), e.p("ws"), e.p("fw"), e.p("claude")
			e.mkdir("ws")
			e.skill("inst/skills/one")
			e.write("inst/agents/custom/two.md", "a")
			e.vars = []string{"HOBBS_HOME=" + inst, "HOBBS_WORKSPACE=" + ws, "HOBBS_FRAMEWORK_DIR=" + fw, "CLAUDE_CONFIG_DIR=" + cl}
			e.run()
			if got := e.link("ws/.claude/skills/one"); got != filepath.Join(inst, "skills", "one") {
				t.Fatal(got)
			}
			if got := e.link("claude/agents/two.md"); got != filepath.Join(inst, "agents", "custom", "two.md") {
				t.Fatal(got)
			}
			// The default places were not touched.
			if _, err := os.Lstat(e.p("hobbs/workspace/.claude")); err == nil {
				t.Fatal("default workspace used despite HOBBS_WORKSPACE")
			}

			// Sourced under set -eu it neither exits the shell nor leaves names behind.
			args := strings.Fields(sh)
			args = append(args, "-euc", `. "$1"; for v in home workspace framework claude kind src dest p d t name; do eval "[ -z \"\${$v+x}\" ]" || echo "leaked $v"; done; command -v _hobbs_init >/dev/null && echo leaked function; command -v link_all >/dev/null && echo leaked link_all; echo alive`, "x", e.script)
			cmd := exec.Command(args[0], args[1:]...)
			cmd.Env = append([]string{"HOME=" + e.home, "PATH=" + os.Getenv("PATH")}, e.vars...)
			out, err := cmd.CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != "alive" {
				t.Fatalf("%v: %s", err, out)
			}
		})
	}
}

func TestMissingPlacesAreQuiet(t *testing.T) {
	e := newEnv(t, shells(t)[0])
	// No instance skills or agents at all, no workspace: nothing to say.
	os.RemoveAll(e.p(".hobbs"))
	os.RemoveAll(e.p("hobbs/workspace"))
	if _, errOut := e.run(); errOut != "" {
		t.Fatalf("stderr: %q", errOut)
	}
	// Skills but no workspace: one warning.
	e.skill(".hobbs/skills/one")
	_, errOut := e.run()
	wantLines(t, errOut, "hobbs-init: no workspace at "+e.p("hobbs/workspace")+"; instance skills not linked")
	// The layout older versions made (the whole directory linked) is accepted.
	e.mkdir("hobbs/workspace/.claude")
	if err := os.Symlink(e.p(".hobbs/skills"), e.p("hobbs/workspace/.claude/skills")); err != nil {
		t.Fatal(err)
	}
	if _, errOut := e.run(); errOut != "" {
		t.Fatalf("stderr: %q", errOut)
	}
	if _, err := os.Lstat(e.p(".hobbs/skills/one/one")); err == nil {
		t.Fatal("linked into the instance through the directory link")
	}
}
