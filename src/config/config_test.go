package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

func TestTemplateIsTheDefaults(t *testing.T) {
	data, err := os.ReadFile("../../templates/config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse("config.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, Default()) {
		t.Fatalf("templates/config.yaml differs from Default():\n%+v\n%+v", c, Default())
	}
}

func TestEveryKeyDocumented(t *testing.T) {
	data, _ := os.ReadFile("../../templates/config.yaml")
	for _, key := range yamlKeys(reflect.TypeOf(Config{})) {
		if !strings.Contains(string(data), key+":") {
			t.Errorf("key %q is not in templates/config.yaml", key)
		}
	}
}

func yamlKeys(t reflect.Type) []string {
	var keys []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		keys = append(keys, strings.Split(f.Tag.Get("yaml"), ",")[0])
		if f.Type.Kind() == reflect.Struct {
			keys = append(keys, yamlKeys(f.Type)...)
		}
	}
	return keys
}

func TestErrorsNameFileAndLine(t *testing.T) {
	cases := []struct{ name, doc, want string }{
		{"unknown top", "image: x\nbogus: 1\n", `c.yaml:2: unknown key "bogus"`},
		{"unknown nested", "memory:\n  context_budget: 5000\n  budjet: 3\n", `c.yaml:3: unknown key "budjet"`},
		{"did you mean", "image: x\nworkspce: ~/w\n", `c.yaml:2: unknown key "workspce" (did you mean workspace?)`},
		{"did you mean nested", "resources:\n  memroy: 2g\n", `c.yaml:2: unknown key "memroy" (did you mean memory?)`},
		{"did you mean in a binding", "secrets:\n  T:\n    vualt: t\n    hosts: [a.b]\n", `c.yaml:3: unknown key "vualt" (did you mean vault?)`},
		{"wrong type", "resources:\n  pids: many\n", `c.yaml:2: wrong type: string "many" where an integer is expected`},
		{"wrong type map", "env: [a, b]\n", `c.yaml:1: wrong type`},
		{"syntax", "image: [unclosed\n", `c.yaml:`},
		{"env not vault", "env:\n  TOKEN: plaintext\n", `c.yaml:2: env.TOKEN: value "plaintext" must be vault:<entry>`},
		{"env bad name", "env:\n  1X: vault:a\n", `c.yaml:2: env.1X: not a valid`},
		{"budget", "memory:\n  context_budget: 10\n", `c.yaml:2: memory.context_budget`},
		{"egress network", "image: x\negress_network: \"--privileged\"\n", `c.yaml:2: egress_network: "--privileged" is neither`},
		{"egress network empty", "egress_network: \"\"\n", `c.yaml:1: egress_network`},
		{"min free disk", "resources:\n  min_free_disk: lots\n", `c.yaml:2: resources.min_free_disk: "lots" is not a size like 1g or 512m (0: no watch)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(c.doc))
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q lacks %q", err, c.want)
			}
			if errs.Code(err) != errs.Usage {
				t.Fatalf("exit code %d", errs.Code(err))
			}
		})
	}
}

func TestLoadMissingAndEnvOverride(t *testing.T) {
	t.Setenv(EnvEngine, "podman")
	dir := t.TempDir()
	c, err := Load(safefile.Beneath(dir), filepath.Join(dir, "none.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Engine != "podman" {
		t.Fatalf("engine %q", c.Engine)
	}
}

// config.yaml planted as a link to another file, or as a FIFO, is refused
// (never followed, never blocking), and the link's target is unchanged.
func TestLoadRefusesLinksAndFIFOs(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "other.yaml")
	const other = "engine: podman\n"
	if err := os.WriteFile(outside, []byte(other), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "config.yaml")); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(safefile.Beneath(dir), filepath.Join(dir, "config.yaml")); !errors.Is(err, safefile.ErrUnsafe) ||
		!strings.Contains(err.Error(), "is a symbolic link") {
		t.Fatalf("linked config.yaml: %v", err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.yaml"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(safefile.Beneath(dir), filepath.Join(dir, "fifo.yaml")); !errors.Is(err, safefile.ErrUnsafe) {
		t.Fatalf("FIFO config: %v", err)
	}
	if b, _ := os.ReadFile(outside); string(b) != other {
		t.Fatalf("target changed: %q", b)
	}
}

func TestEgressNetworkValues(t *testing.T) {
	for _, v := range []string{"default", "session", "my-net", "proxy_net.1"} {
		c, err := Parse("c", []byte("egress_network: "+v+"\n"))
		if err != nil || c.EgressNet != v {
			t.Errorf("%s: %v %+v", v, err, c)
		}
	}
	if c := Default(); c.EgressNet != EgressDefault {
		t.Errorf("default %q", c.EgressNet)
	}
}

func TestVaultEnvSorted(t *testing.T) {
	c, err := Parse("c", []byte("env:\n  B: vault:b\n  A: vault:a-1\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := c.VaultEnv()
	if len(got) != 2 || got[0] != [2]string{"A", "a-1"} || got[1] != [2]string{"B", "b"} {
		t.Fatalf("%v", got)
	}
}

func FuzzParse(f *testing.F) {
	seed, _ := os.ReadFile("../../templates/config.yaml")
	f.Add(seed)
	f.Add([]byte("env:\n  A: vault:x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("f", data)
		if err == nil && c == nil {
			t.Fatal("nil config without error")
		}
	})
}

func TestVarsUsing(t *testing.T) {
	c, err := Parse("config.yaml", []byte("env:\n  B_TOKEN: vault:gh\n  A_TOKEN: vault:gh\n  C: vault:other\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.VarsUsing("gh"), ","); got != "A_TOKEN,B_TOKEN" {
		t.Errorf("VarsUsing(gh) = %q, want A_TOKEN,B_TOKEN", got)
	}
	if got := c.VarsUsing("none"); len(got) != 0 {
		t.Errorf("VarsUsing(none) = %q, want none", got)
	}
}

// TestSyntaxErrorLine: a YAML syntax error names the line of the mistake,
// where yaml.v3 alone names a line before it (the enclosing mapping) or
// after it (where an unclosed quote ends), and no hint sends the user to
// the command that printed it.
func TestSyntaxErrorLine(t *testing.T) {
	seed, err := os.ReadFile("../../templates/config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(seed), "\n")
	find := func(prefix string) int {
		for i, l := range lines {
			if strings.HasPrefix(l, prefix) {
				return i
			}
		}
		t.Fatalf("no line %q in the template", prefix)
		return 0
	}
	for _, c := range []struct{ name, prefix, repl string }{
		{"unclosed quote", "base_image:", `base_image: "hobbs-runtime:latest`},
		{"one space too far", "  pids:", " pids: 512"},
		{"text after a quoted value", "image:", `image: "a" b`},
		{"no colon", "engine:", "engine podman"},
		{"unclosed flow mapping", "env:", "env: {A: vault:a"},
	} {
		i := find(c.prefix)
		broken := append(append(append([]string{}, lines[:i]...), c.repl), lines[i+1:]...)
		_, err := Parse("config.yaml", []byte(strings.Join(broken, "\n")))
		want := fmt.Sprintf("config.yaml:%d: ", i+1)
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: got %v, want %s…", c.name, err, want)
			continue
		}
		if a := errs.AdviceOf(err); a.Kind != Invalid {
			t.Errorf("%s: advice %+v", c.name, a)
		}
	}
}

// TestEngineValue: engine: takes docker, podman or a path; anything else
// is named with the valid values at its line.
func TestEngineValue(t *testing.T) {
	for _, ok := range []string{"docker", "podman", "/usr/local/bin/docker"} {
		if _, err := Parse("c.yaml", []byte("engine: "+ok+"\n")); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	_, err := Parse("c.yaml", []byte("image: x\nengine: dokcer\n"))
	if err == nil || errs.Code(err) != errs.Usage || !strings.Contains(err.Error(), `c.yaml:2: engine: "dokcer" is not an engine Hobbs knows: docker, podman`) {
		t.Errorf("dokcer: %v", err)
	}
}

func TestSecretsSection(t *testing.T) {
	c, err := Parse("config.yaml", []byte("secrets:\n  GITHUB_TOKEN:\n    vault: github-token\n    hosts: [api.github.com, \"*.githubusercontent.com\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if b := c.Secrets["GITHUB_TOKEN"]; b.Vault != "github-token" || len(b.Hosts) != 2 {
		t.Fatalf("parsed %+v", c.Secrets)
	}
	if got := c.VarsUsing("github-token"); len(got) != 1 || got[0] != "GITHUB_TOKEN" {
		t.Fatalf("VarsUsing: %v", got)
	}
	for _, ok := range []string{
		"secrets:\n  T:\n    vault: t\n    hosts: [api.telegram.org]\n    in: [path]\n",
		"secrets:\n  T:\n    vault: t\n    hosts: [a.com]\n    in: [body, header]\n    requests: [\"POST /token\", \"GET,POST /oauth/\", \"* /x\"]\n",
		"secrets:\n  AWS_ACCESS_KEY_ID:\n    vault: aws\n    hosts: [\"*.amazonaws.com\"]\n    kind: aws-sigv4\n    requests: [\"GET /\"]\n",
	} {
		if _, err := Parse("config.yaml", []byte(ok)); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, tc := range []struct{ yaml, want string }{
		{"secrets:\n  T:\n    vault: t\n", "config.yaml:2: secrets.T.hosts: name at least one host"},
		{"secrets:\n  T:\n    vault: Bad/Name\n    hosts: [a.com]\n", "secrets.T.vault: \"Bad/Name\" is not a vault entry name"},
		{"env:\n  T: vault:t\nsecrets:\n  T:\n    vault: t\n    hosts: [a.com]\n", "secrets.T: also mapped under env"},
		{"secrets:\n  1T:\n    vault: t\n    hosts: [a.com]\n", "secrets.1T: not a valid environment variable name"},
		{"secrets:\n  T:\n    vault: t\n    host: [a.com]\n", "unknown key \"host\""},
		// Where the value may go: body and query need requests.
		{"secrets:\n  T:\n    vault: t\n    hosts: [a.com]\n    in: [body]\n", "config.yaml:5: secrets.T.in: body and query carry data"},
		{"secrets:\n  T:\n    vault: t\n    hosts: [a.com]\n    in: [path, query]\n", "config.yaml:5: secrets.T.in: body and query carry data"},
		{"secrets:\n  T:\n    vault: t\n    hosts: [a.com]\n    in: [cookie]\n", "config.yaml:5: secrets.T.in: \"cookie\" is not a position"},
		{"secrets:\n  T:\n    vault: t\n    hosts: [a.com]\n    in: []\n", "config.yaml:5: secrets.T.in: name at least one position"},
		{"secrets:\n  T:\n    vault: t\n    hosts: [a.com]\n    in: [body]\n    requests: [\"post /token\"]\n", "config.yaml:6: secrets.T.requests: \"post /token\": write METHODS PATH"},
		{"secrets:\n  T:\n    vault: t\n    hosts: [a.com]\n    in: [body]\n    requests: [\"POST\"]\n", "secrets.T.requests: \"POST\": write METHODS PATH"},
		{"secrets:\n  T:\n    vault: t\n    hosts: [a.com]\n    in: [body]\n    requests: [\"POST /a/../token\"]\n", "secrets.T.requests: \"POST /a/../token\""},
		// An AWS key pair.
		{"secrets:\n  T:\n    vault: t\n    hosts: [a.com]\n    kind: aws\n", "config.yaml:5: secrets.T.kind: \"aws\" is not a kind"},
		{"secrets:\n  AWS_KEY:\n    vault: t\n    hosts: [a.com]\n    kind: aws-sigv4\n", "config.yaml:2: secrets.AWS_KEY: an aws-sigv4 binding is named AWS_ACCESS_KEY_ID"},
		{"secrets:\n  AWS_ACCESS_KEY_ID:\n    vault: t\n    hosts: [a.com]\n    kind: aws-sigv4\n    in: [header]\n", "config.yaml:6: secrets.AWS_ACCESS_KEY_ID.in: an aws-sigv4 binding puts no value in requests"},
		{"env:\n  AWS_SECRET_ACCESS_KEY: vault:x\nsecrets:\n  AWS_ACCESS_KEY_ID:\n    vault: t\n    hosts: [a.com]\n    kind: aws-sigv4\n", "secrets.AWS_ACCESS_KEY_ID: AWS_SECRET_ACCESS_KEY is also mapped"},
	} {
		_, err := Parse("config.yaml", []byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.yaml, err, tc.want)
		}
	}
}

// An unknown key far from every known one gets no guess, and the advice
// of an invalid config.yaml.
func TestUnknownKeyHint(t *testing.T) {
	_, err := Parse("c.yaml", []byte("zzzzzz: 1\n"))
	if err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Fatalf("error %v", err)
	}
	if a := errs.AdviceOf(err); a.Kind != Invalid {
		t.Fatalf("advice %+v", a)
	}
}

// Keys lists every setting of Config from the template, with its default
// and its comment.
func TestKeys(t *testing.T) {
	data, err := os.ReadFile("../../templates/config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	keys, err := Keys(data)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Key{}
	for _, k := range keys {
		got[k.Name] = k
		if k.Doc == "" {
			t.Errorf("%s: no comment in the template", k.Name)
		}
	}
	var want []string
	var leaves func(rt reflect.Type, prefix string)
	leaves = func(rt reflect.Type, prefix string) {
		for i := 0; i < rt.NumField(); i++ {
			f := rt.Field(i)
			if f.Type.Kind() == reflect.Struct {
				leaves(f.Type, prefix+yamlName(f)+".")
				continue
			}
			want = append(want, prefix+yamlName(f))
		}
	}
	leaves(reflect.TypeOf(Config{}), "")
	for _, w := range want {
		if _, ok := got[w]; !ok {
			t.Errorf("Keys lacks %s", w)
		}
	}
	if len(keys) != len(want) {
		t.Errorf("Keys has %d keys, Config %d: %v", len(keys), len(want), keys)
	}
	for name, def := range map[string]string{"base_image": "hobbs-runtime:latest", "resources.pids": "512", "env": "{}", "image": ""} {
		if got[name].Default != def {
			t.Errorf("%s: default %q, want %q", name, got[name].Default, def)
		}
	}
	if d := got["resources.memory"].Doc; d != "docker --memory" {
		t.Errorf("a line comment: %q", d)
	}
	if s := got["workspace"].Summary(); s != "Host directory mounted at ~/hobbs/workspace in the agent container." {
		t.Errorf("summary: %q", s)
	}
	if d := got["env"].Doc; strings.Contains(d, "GITHUB_TOKEN") {
		t.Errorf("the example is not prose: %q", d)
	}
}
