package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// TestSet: a key set in templates/config.yaml changes only its value's
// bytes (comments, blank lines and alignment stay); a missing key is added
// under its mapping; a flow mapping ({}) takes a new key; the result is
// what Parse reads; a value Parse refuses and a file whose YAML does not
// parse are errors that write nothing.
func TestSet(t *testing.T) {
	tpl, err := os.ReadFile("../../templates/config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		key, value string
		check      func(c *Config) bool
		// the lines that differ from the template: "-old" and "+new"
		diff []string
	}{
		{"resources.memory", "8g", func(c *Config) bool { return c.Resources.Memory == "8g" },
			[]string{`-  memory: "4g"     # docker --memory`, `+  memory: "8g"     # docker --memory`}},
		{"resources.pids", "1024", func(c *Config) bool { return c.Resources.PIDs == 1024 },
			[]string{`-  pids: 512        # docker --pids-limit`, `+  pids: 1024        # docker --pids-limit`}},
		{"workspace_git_readonly", "false", func(c *Config) bool { return !c.GitReadOnly() },
			[]string{"-workspace_git_readonly: true", "+workspace_git_readonly: false"}},
		{"engine", "podman", func(c *Config) bool { return c.Engine == "podman" },
			[]string{`-engine: "docker"`, `+engine: "podman"`}},
		{"env.GITHUB_TOKEN", "vault:gh", func(c *Config) bool { return c.Env["GITHUB_TOKEN"] == "vault:gh" },
			[]string{"-env: {}", "+env: {GITHUB_TOKEN: 'vault:gh'}"}},
	}
	for _, c := range cases {
		t.Run(c.key, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "config.yaml")
			if err := os.WriteFile(p, tpl, 0o640); err != nil {
				t.Fatal(err)
			}
			root := safefile.Beneath(dir)
			ch, err := Set(root, p, filepath.Join(dir, "locks", "config"), c.key, c.value)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(p)
			cfg, err := Parse(p, got)
			if err != nil || !c.check(cfg) {
				t.Fatalf("after set %s %s: %v\n%s", c.key, c.value, err, got)
			}
			if d := lineDiff(string(tpl), string(got)); strings.Join(d, "\n") != strings.Join(c.diff, "\n") {
				t.Errorf("set %s changed:\n%s\nwant:\n%s", c.key, strings.Join(d, "\n"), strings.Join(c.diff, "\n"))
			}
			if ch.New == "" || ch.Key != c.key {
				t.Errorf("change %+v", ch)
			}
			if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o640 {
				t.Errorf("mode %v", fi.Mode().Perm())
			}
		})
	}

	t.Run("added", func(t *testing.T) {
		dir := t.TempDir()
		p := filepath.Join(dir, "config.yaml")
		os.WriteFile(p, []byte("# mine\nimage: \"x:1\"\n\nresources:\n  memory: 2g # small\n\n# the end\n"), 0o644)
		root := safefile.Beneath(dir)
		if _, err := Set(root, p, filepath.Join(dir, "lock"), "resources.cpus", "2"); err != nil {
			t.Fatal(err)
		}
		ch, err := Set(root, p, filepath.Join(dir, "lock"), "memory.context_budget", "8000")
		if err != nil || !ch.Added {
			t.Fatal(err, ch)
		}
		got, _ := os.ReadFile(p)
		want := "# mine\nimage: \"x:1\"\n\nresources:\n  memory: 2g # small\n  cpus: 2\n\n# the end\nmemory:\n  context_budget: 8000\n"
		if string(got) != want {
			t.Errorf("got:\n%s\nwant:\n%s", got, want)
		}
	})

	t.Run("refused", func(t *testing.T) {
		dir := t.TempDir()
		p := filepath.Join(dir, "config.yaml")
		os.WriteFile(p, tpl, 0o644)
		root := safefile.Beneath(dir)
		for _, kv := range [][2]string{{"resources.pids", "many"}, {"no_such_key", "1"}, {"resources.memory.x", "1"}, {"engine", "a: b: c"}} {
			if _, err := Set(root, p, filepath.Join(dir, "lock"), kv[0], kv[1]); errs.Code(err) != errs.Usage {
				t.Errorf("set %s %q: %v (code %d), want a usage error", kv[0], kv[1], err, errs.Code(err))
			}
		}
		if got, _ := os.ReadFile(p); string(got) != string(tpl) {
			t.Error("a refused set wrote the file")
		}
		bad := []byte("image: \"unclosed\nengine: docker\n")
		os.WriteFile(p, bad, 0o644)
		if _, err := Set(root, p, filepath.Join(dir, "lock"), "engine", "podman"); errs.Code(err) != errs.Usage || !strings.Contains(err.Error(), "config.yaml:") {
			t.Errorf("a file that does not parse: %v", err)
		}
		if got, _ := os.ReadFile(p); string(got) != string(bad) {
			t.Error("a file that does not parse was rewritten")
		}
	})
}

// TestGet: the effective value of a key; an unknown key suggests the
// closest.
func TestGet(t *testing.T) {
	c := Default()
	if v, err := c.Get("resources.memory"); err != nil || v != "4g" {
		t.Errorf("resources.memory = %q, %v", v, err)
	}
	if v, err := c.Get("workspace_git_readonly"); err != nil || v != "true" {
		t.Errorf("workspace_git_readonly = %q, %v", v, err)
	}
	_, err := c.Get("resources.memroy")
	if a := errs.AdviceOf(err); errs.Code(err) != errs.Usage || a.Kind != UnknownKey || a.Facts["suggest"] != "resources.memory" {
		t.Errorf("unknown key: %v %+v", err, a)
	}
}

// lineDiff is the lines of a not in b ("-") and of b not in a ("+"), in
// order, for files that differ line for line.
func lineDiff(a, b string) []string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out []string
	if len(la) != len(lb) {
		return []string{"line count differs"}
	}
	for i := range la {
		if la[i] != lb[i] {
			out = append(out, "-"+la[i], "+"+lb[i])
		}
	}
	return out
}
