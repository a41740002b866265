// Package config loads and validates an instance's config.yaml.
//
// templates/config.yaml is the reference: every key is documented there (and
// listed from it by hobbs config keys) and a test keeps the two in step. Decoding is strict: an unknown key or a value
// of the wrong type is an error naming file:line (exit code 2). A config file
// that does not exist means "all defaults".
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/policy"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// Config is the effective configuration of an instance.
type Config struct {
	Image        string `yaml:"image" json:"image"`
	BaseImage    string `yaml:"base_image" json:"base_image"`
	Workspace    string `yaml:"workspace" json:"workspace"`
	ClaudeVolume string `yaml:"claude_volume" json:"claude_volume"`
	Engine       string `yaml:"engine" json:"engine"`
	EgressNet    string `yaml:"egress_network" json:"egress_network"`
	Egress       Egress `yaml:"egress" json:"egress"`
	// WorkspaceGitReadOnly keeps a workspace repository's .git read-only in
	// the agent's container (nil: true).
	WorkspaceGitReadOnly *bool                     `yaml:"workspace_git_readonly" json:"workspace_git_readonly"`
	Env                  map[string]string         `yaml:"env" json:"env"`
	Secrets              map[string]policy.Binding `yaml:"secrets" json:"secrets"`
	Resources            Resources                 `yaml:"resources" json:"resources"`
	Memory               Memory                    `yaml:"memory" json:"memory"`
	Playbooks            Playbooks                 `yaml:"playbooks" json:"playbooks"`
	Serve                Serve                     `yaml:"serve" json:"serve"`
	Triggers             map[string]Trigger        `yaml:"triggers" json:"triggers"`
	Channels             Channels                  `yaml:"channels" json:"channels"`
	Backup               Backup                    `yaml:"backup" json:"backup"`
}

// Resources are limits for the agent container, and the free disk the
// launcher keeps on the host while a session is live.
type Resources struct {
	Memory string `yaml:"memory" json:"memory"`
	PIDs   int    `yaml:"pids" json:"pids"`
	CPUs   string `yaml:"cpus" json:"cpus"`
	// MinFreeDisk: the launcher stops a session when a filesystem holding
	// the agent's shares or workspace has less free space ("1g", "512m";
	// "0": never).
	MinFreeDisk string `yaml:"min_free_disk" json:"min_free_disk"`
}

// DefaultMinFreeDisk is resources.min_free_disk when config.yaml leaves it
// out: room for the session to end cleanly and its record to be written.
const DefaultMinFreeDisk = "1g"

// MinFreeDiskBytes is MinFreeDisk in bytes (0: no watch); a value Validate
// refuses counts as the default.
func (r Resources) MinFreeDiskBytes() int64 {
	v := r.MinFreeDisk
	if v == "" || !memSizeRe.MatchString(v) {
		v = DefaultMinFreeDisk
	}
	mult := int64(1)
	switch v[len(v)-1] {
	case 'k', 'K':
		mult = 1 << 10
	case 'm', 'M':
		mult = 1 << 20
	case 'g', 'G':
		mult = 1 << 30
	}
	n, err := strconv.ParseInt(strings.TrimRight(v, "bkmgBKMG"), 10, 64)
	if err != nil || n > (1<<62)/mult {
		return 0
	}
	return n * mult
}

// Memory configures the memory tools.
type Memory struct {
	ContextBudget int `yaml:"context_budget" json:"context_budget"`
	TidyAfterDays int `yaml:"tidy_after_days" json:"tidy_after_days"`
}

// Playbooks configures the playbook tools.
type Playbooks struct {
	ReviewEveryDays int `yaml:"review_every_days" json:"review_every_days"`
}

// The egress_network values that are not a network's name.
const (
	EgressDefault = "default" // the engine's default network; nothing created
	EgressSession = "session" // a network of its own per session, created and removed
)

// EnvEngine overrides Config.Engine.
const EnvEngine = "HOBBS_DOCKER"

// cleanPrefix is path.Clean keeping a trailing slash.
func cleanPrefix(p string) string {
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}

// checkPlacement reports what is wrong with a binding's in: and requests:
// (the key and the reason), or "".
func checkPlacement(b policy.Binding) (key, why string) {
	if b.In != nil && len(b.In) == 0 {
		return "in", "name at least one position: header, path, query, body (or leave in: out for header)"
	}
	data := false
	for _, p := range b.In {
		if !slices.Contains(policy.PositionNames, p) {
			return "in", fmt.Sprintf("%q is not a position: write header, path, query or body", p)
		}
		data = data || p == "body" || p == "query"
	}
	for _, r := range b.Requests {
		f := strings.Fields(r)
		if !requestRe.MatchString(r) || len(f) != 2 || cleanPrefix(f[1]) != f[1] {
			return "requests", fmt.Sprintf("%q: write METHODS PATH, e.g. \"POST /token\" (methods comma-separated or *, a path prefix)", r)
		}
	}
	if data && len(b.Requests) == 0 {
		return "in", "body and query carry data, which a host may store and serve back: name the requests that may carry the secret there, e.g. requests: [\"POST /token\"]"
	}
	return "", ""
}

// VaultPrefix marks an env value that names a vault entry.
const VaultPrefix = "vault:"

// GitReadOnly reports whether a session mounts the workspace's .git
// read-only (workspace_git_readonly, true unless set false).
func (c *Config) GitReadOnly() bool {
	return c == nil || c.WorkspaceGitReadOnly == nil || *c.WorkspaceGitReadOnly
}

// Default returns the configuration used for keys the file does not set.
func Default() *Config {
	return &Config{
		BaseImage: "hobbs-runtime:latest",
		Workspace: "~/hobbs-workspace",
		Engine:    "docker",
		EgressNet: EgressDefault,
		Egress:    Egress{Hold: "0s"},
		Env:       map[string]string{},
		Secrets:   map[string]policy.Binding{},
		Resources: Resources{Memory: "4g", PIDs: 512, MinFreeDisk: DefaultMinFreeDisk},
		Memory:    Memory{ContextBudget: 9500, TidyAfterDays: 90},
		Playbooks: Playbooks{ReviewEveryDays: 30},
		Serve:     Serve{Listen: DefaultServeListen, MaxRuns: DefaultServeMaxRuns, MaxQueue: DefaultServeMaxQueue},
		Triggers:  map[string]Trigger{},
		Channels:  Channels{Telegram: Telegram{APIURL: DefaultTelegramAPI}},
		Backup:    DefaultBackup(),

		// As templates/config.yaml writes it (GitReadOnly treats nil the same).
		WorkspaceGitReadOnly: func() *bool { t := true; return &t }(),
	}
}

// Load reads path (opened beneath root, the instance's safe-open layer: a
// link or special file there is refused) over the defaults, then applies
// environment overrides. A missing file yields the defaults.
func Load(root safefile.Root, path string) (*Config, error) {
	data, err := root.ReadFile(path, instance.MaxTextFile)
	if errors.Is(err, fs.ErrNotExist) {
		c := Default()
		c.applyEnv()
		return c, nil
	}
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "read config")
	}
	c, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	c.applyEnv()
	return c, nil
}

// Parse decodes data (named path in errors) over the defaults and validates
// it. It does not apply environment overrides.
func Parse(path string, data []byte) (*Config, error) {
	c := Default()
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, yamlError(path, syntaxError(data, err), nil)
	}
	if len(root.Content) == 0 { // empty or comments only
		return c, nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil {
		return nil, yamlError(path, err, root.Content[0])
	}
	if c.Env == nil {
		c.Env = map[string]string{}
	}
	if c.Secrets == nil {
		c.Secrets = map[string]policy.Binding{}
	}
	if c.Triggers == nil {
		c.Triggers = map[string]Trigger{}
	}
	if err := c.validate(path, root.Content[0]); err != nil {
		return nil, err
	}
	return c, nil
}

var (
	lineRe       = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)
	unknownRe    = regexp.MustCompile(`^field (\S+) not found in type \S+$`)
	wrongTypeRe  = regexp.MustCompile("^cannot unmarshal !!(\\w+)(?: `(.*)`)? into (\\S+)$")
	envNameRe    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	vaultEntryRe = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)
	memSizeRe    = regexp.MustCompile(`^[0-9]+[bkmgBKMG]?$`)
	networkRe    = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,127}$`)
	// requestRe is a binding's request (policy.ParsePlacement reads it):
	// upper-case methods or *, a plain path prefix.
	requestRe = regexp.MustCompile(`^(\*|[A-Z]+(,[A-Z]+)*) +/[^\s?#%\\]*$`)
)

// syntaxError gives a YAML syntax error of data the line where the text
// stops being YAML: the line after the longest run of first lines that
// parses. yaml.v3 reports some errors where its parser gave up, lines after
// the mistake (an unclosed quote), or at the start of the enclosing mapping
// (a key indented one space too far), which points the user at the wrong
// line.
func syntaxError(data []byte, err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		return err
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines) > maxSyntaxScan {
		return err
	}
	good := 0
	for n := 1; n <= len(lines); n++ {
		var node yaml.Node
		if yaml.Unmarshal(bytes.Join(lines[:n], nil), &node) == nil {
			good = n
		}
	}
	if good >= len(lines) {
		return err
	}
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if sm := lineRe.FindStringSubmatch(msg); sm != nil {
		msg = sm[2]
	}
	return fmt.Errorf("line %d: %s", good+1, msg)
}

// maxSyntaxScan bounds the lines syntaxError parses again (each prefix
// once): a config.yaml is a few dozen lines.
const maxSyntaxScan = 2000

// yamlError turns yaml.v3's errors into "path:line: message" lines; an
// unknown key gets the nearest known key of its mapping (root: the
// document's mapping, nil for a syntax error).
func yamlError(path string, err error, root *yaml.Node) error {
	var msgs []string
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs = te.Errors
	} else {
		msgs = []string{strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	var out []string
	for _, m := range msgs {
		line, text := "", m
		if sm := lineRe.FindStringSubmatch(m); sm != nil {
			line, text = sm[1], sm[2]
		}
		if sm := unknownRe.FindStringSubmatch(text); sm != nil {
			text = fmt.Sprintf("unknown key %q", sm[1])
			if n, err := strconv.Atoi(line); err == nil {
				if s := suggestKey(root, n, sm[1]); s != "" {
					text += fmt.Sprintf(" (did you mean %s?)", s)
				}
			}
		} else if sm := wrongTypeRe.FindStringSubmatch(text); sm != nil {
			got := kindName(sm[1])
			if sm[2] != "" {
				got += fmt.Sprintf(" %q", sm[2])
			}
			text = fmt.Sprintf("wrong type: %s where %s is expected", got, goTypeName(sm[3]))
		}
		if line != "" {
			out = append(out, fmt.Sprintf("%s:%s: %s", path, line, text))
		} else {
			out = append(out, fmt.Sprintf("%s: %s", path, text))
		}
	}
	return &errs.Error{Code: errs.Usage, Msg: strings.Join(out, "\n"), Advice: errs.NewAdvice(Invalid)}
}

func kindName(tag string) string {
	switch tag {
	case "str":
		return "string"
	case "int":
		return "integer"
	case "seq":
		return "list"
	case "map":
		return "mapping"
	}
	return tag
}

func goTypeName(t string) string {
	switch {
	case t == "string":
		return "a string"
	case strings.HasPrefix(t, "int"):
		return "an integer"
	case strings.HasPrefix(t, "map"):
		return "a mapping"
	case strings.HasPrefix(t, "config."), strings.HasPrefix(t, "policy."):
		return "a mapping"
	}
	return t
}

// validate checks values that decode but make no sense, naming their line.
func (c *Config) validate(path string, root *yaml.Node) error {
	var problems []string
	bad := func(keys []string, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("%s:%d: %s: %s", path, lineOf(root, keys...),
			strings.Join(keys, "."), fmt.Sprintf(format, args...)))
	}
	switch {
	case c.Engine == "":
		bad([]string{"engine"}, "must not be empty (docker or podman)")
	case !knownEngine(c.Engine):
		bad([]string{"engine"}, "%q is not an engine Hobbs knows: docker, podman, or the path of an engine CLI", c.Engine)
	}
	if !networkRe.MatchString(c.EgressNet) {
		bad([]string{"egress_network"}, "%q is neither default, session nor a network name", c.EgressNet)
	}
	names := make([]string, 0, len(c.Env))
	for k := range c.Env {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v := c.Env[k]
		if !envNameRe.MatchString(k) {
			bad([]string{"env", k}, "not a valid environment variable name")
			continue
		}
		entry, ok := strings.CutPrefix(v, VaultPrefix)
		if !ok {
			bad([]string{"env", k}, "value %q must be vault:<entry>; secrets come from the vault, not config", v)
		} else if !vaultEntryRe.MatchString(entry) {
			bad([]string{"env", k}, "vault entry %q is not a valid name", entry)
		}
	}
	bnames := make([]string, 0, len(c.Secrets))
	for k := range c.Secrets {
		bnames = append(bnames, k)
	}
	sort.Strings(bnames)
	for _, k := range bnames {
		b := c.Secrets[k]
		switch {
		case !envNameRe.MatchString(k):
			bad([]string{"secrets", k}, "not a valid environment variable name")
		case c.Env[k] != "":
			bad([]string{"secrets", k}, "also mapped under env; a variable is either bound (secrets) or in the environment (env)")
		case !vaultEntryRe.MatchString(b.Vault):
			bad([]string{"secrets", k, "vault"}, "%q is not a vault entry name", b.Vault)
		case len(b.Hosts) == 0:
			bad([]string{"secrets", k, "hosts"}, "name at least one host that may receive the secret, e.g. hosts: [api.github.com]")
		case b.Kind != "" && b.Kind != policy.KindAWSSigV4:
			bad([]string{"secrets", k, "kind"}, "%q is not a kind: leave kind: out, or write aws-sigv4", b.Kind)
		case b.Kind == policy.KindAWSSigV4 && k != policy.AWSKeyIDVar:
			bad([]string{"secrets", k}, "an aws-sigv4 binding is named %s (the agent gets %s too)", policy.AWSKeyIDVar, policy.AWSSecretKeyVar)
		case b.Kind == policy.KindAWSSigV4 && b.In != nil:
			bad([]string{"secrets", k, "in"}, "an aws-sigv4 binding puts no value in requests: the proxy signs them; leave in: out")
		case b.Kind == policy.KindAWSSigV4 && (c.Env[policy.AWSSecretKeyVar] != "" || c.Secrets[policy.AWSSecretKeyVar].Vault != ""):
			bad([]string{"secrets", k}, "%s is also mapped under env or secrets; the aws-sigv4 binding gives the agent its placeholder", policy.AWSSecretKeyVar)
		default:
			if key, why := checkPlacement(b); key != "" {
				bad([]string{"secrets", k, key}, "%s", why)
			}
		}
	}
	if c.Resources.PIDs < 0 {
		bad([]string{"resources", "pids"}, "must be 0 (no limit) or positive")
	}
	if c.Resources.Memory != "" && !memSizeRe.MatchString(c.Resources.Memory) {
		bad([]string{"resources", "memory"}, "%q is not a size like 4g or 512m", c.Resources.Memory)
	}
	if c.Resources.MinFreeDisk != "" && !memSizeRe.MatchString(c.Resources.MinFreeDisk) {
		bad([]string{"resources", "min_free_disk"}, "%q is not a size like 1g or 512m (0: no watch)", c.Resources.MinFreeDisk)
	}
	if c.Resources.CPUs != "" {
		if f, err := strconv.ParseFloat(c.Resources.CPUs, 64); err != nil || f <= 0 {
			bad([]string{"resources", "cpus"}, "%q is not a positive number", c.Resources.CPUs)
		}
	}
	if c.Memory.ContextBudget < 1000 {
		bad([]string{"memory", "context_budget"}, "must be at least 1000 characters")
	}
	if c.Memory.TidyAfterDays < 1 {
		bad([]string{"memory", "tidy_after_days"}, "must be at least 1")
	}
	if c.Playbooks.ReviewEveryDays < 1 {
		bad([]string{"playbooks", "review_every_days"}, "must be at least 1")
	}
	c.validateServe(bad)
	c.validateEgress(bad)
	c.validateBackup(bad)
	if len(problems) > 0 {
		return errs.Usagef("%s", strings.Join(problems, "\n"))
	}
	return nil
}

// knownEngine reports whether name is docker, podman or a path to a CLI
// (it holds a slash), as package engine takes them.
func knownEngine(name string) bool {
	return name == "docker" || name == "podman" || strings.Contains(name, "/")
}

// lineOf returns the line of the value at keys in a mapping node, or of the
// deepest key found.
func lineOf(n *yaml.Node, keys ...string) int {
	line := n.Line
	for _, k := range keys {
		if n.Kind != yaml.MappingNode {
			return line
		}
		found := false
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				line = n.Content[i].Line
				n = n.Content[i+1]
				found = true
				break
			}
		}
		if !found {
			return line
		}
	}
	return line
}

func (c *Config) applyEnv() {
	if v := os.Getenv(EnvEngine); v != "" {
		c.Engine = v
	}
}

// WorkspaceDir returns the workspace with "~" expanded and made absolute.
func (c *Config) WorkspaceDir() (string, error) {
	return ExpandHome(c.Workspace)
}

// ExpandHome expands a leading "~" to the user's home directory.
func ExpandHome(p string) (string, error) {
	if p == "~" || strings.HasPrefix(p, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		p = filepath.Join(home, strings.TrimPrefix(p, "~"))
	}
	return filepath.Abs(p)
}

// VaultEnv returns the env mapping as NAME → vault entry, sorted by NAME.
func (c *Config) VaultEnv() [][2]string {
	var out [][2]string
	for k, v := range c.Env {
		if e, ok := strings.CutPrefix(v, VaultPrefix); ok {
			out = append(out, [2]string{k, e})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// VarsUsing returns the variables (sorted) that env: maps or secrets: binds
// to the vault entry name, so that removing or renaming the entry can say
// what it breaks.
func (c *Config) VarsUsing(name string) []string {
	var out []string
	for _, m := range c.VaultEnv() {
		if m[1] == name {
			out = append(out, m[0])
		}
	}
	for k, b := range c.Secrets {
		if b.Vault == name {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// Bindings returns secrets:, each binding named by its variable, sorted by
// name.
func (c *Config) Bindings() []policy.Binding {
	out := make([]policy.Binding, 0, len(c.Secrets))
	for _, n := range c.BindingNames() {
		b := c.Secrets[n]
		b.Name = n
		out = append(out, b)
	}
	return out
}

// BindingNames returns the variables secrets: binds, sorted.
func (c *Config) BindingNames() []string {
	out := make([]string, 0, len(c.Secrets))
	for k := range c.Secrets {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
