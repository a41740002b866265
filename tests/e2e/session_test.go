package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// kv parses the probe's "key=value" lines.
func kv(out string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok && !strings.Contains(k, " ") {
			m[k] = v
		}
	}
	return m
}

const secretValue = "e2e-s3cret-value-7f3a9c"

const egressMarker = `{"event":"egress.deny","subject":"e2e-marker:443"}` + "\n"

const sessionProbe = `set -u
W=/home/dev/hobbs/workspace
echo "uid=$(id -u)"
echo "gid=$(id -g)"
echo "capeff=$(sed -n 's/^CapEff:[[:space:]]*//p' /proc/self/status)"
echo "capprm=$(sed -n 's/^CapPrm:[[:space:]]*//p' /proc/self/status)"
echo "nonewprivs=$(sed -n 's/^NoNewPrivs:[[:space:]]*//p' /proc/self/status)"
if echo x >> /etc/claude-code/CLAUDE.md 2>/dev/null; then echo identity_write=allowed; else echo identity_write=denied; fi
if mkdir /etc/claude-code/.claude/skills/evil 2>/dev/null; then echo skills_write=allowed; else echo skills_write=denied; fi
if echo x >> /etc/claude-code/.claude/agents/researcher.md 2>/dev/null; then echo agents_write=allowed; else echo agents_write=denied; fi
if echo '{}' > /etc/claude-code/managed-settings.json 2>/dev/null; then echo settings_write=allowed; else echo settings_write=denied; fi
if mv /etc/claude-code/.claude /etc/claude-code/moved 2>/dev/null; then echo identity_move=allowed; else echo identity_move=denied; fi
if mv /home/dev/hobbs /home/dev/moved 2>/dev/null; then echo hobbs_move=allowed; else echo hobbs_move=denied; fi
if [ -e /home/dev/.hobbs/vault ]; then echo vault_visible=yes; else echo vault_visible=no; fi
if touch /home/dev/.hobbs/vault/keys/planted 2>/dev/null; then echo keys_write=allowed; else echo keys_write=denied; fi
if echo "domains: ['*.evil.example']" >> /home/dev/.hobbs/policy.yaml 2>/dev/null; then echo policy_write=allowed; else echo policy_write=denied; fi
echo "env: {X: vault:e2e-token}" > /home/dev/.hobbs/.cfg-new
if mv /home/dev/.hobbs/.cfg-new /home/dev/.hobbs/config.yaml 2>/dev/null; then echo config_replace=allowed; else echo config_replace=denied; fi
rm -f /home/dev/.hobbs/.cfg-new
if rm -f /home/dev/.hobbs/policy.yaml 2>/dev/null && [ ! -e /home/dev/.hobbs/policy.yaml ]; then echo policy_rm=allowed; else echo policy_rm=denied; fi
E=/home/dev/.hobbs/logs/egress
if echo forged-line >> $E/audit.log 2>/dev/null; then echo egress_append=allowed; else echo egress_append=denied; fi
if ( : > $E/audit.log ) 2>/dev/null; then echo egress_truncate=allowed; else echo egress_truncate=denied; fi
if [ -e $E ]; then echo egress_visible=yes; else echo egress_visible=no; fi
if touch $E/forged.log 2>/dev/null; then echo egress_create=allowed; else echo egress_create=denied; fi
if mv $E /home/dev/.hobbs/logs/moved 2>/dev/null; then echo egress_move=allowed; else echo egress_move=denied; fi
for f in .git .gitignore .locks logs/audit.log; do [ -e /home/dev/.hobbs/$f ] && echo "hidden_visible=$f"; done
if touch /home/dev/.hobbs/planted 2>/dev/null; then echo root_write=allowed; else echo root_write=denied; fi
echo "secret=${E2E_SECRET:-}"
echo "home=$HOME"
echo "hobbs_home=$HOBBS_HOME"
echo "context=$HOBBS_CONTEXT"
echo "no_proxy=$NO_PROXY"
case "${HTTPS_PROXY:-}" in http://hobbs:*@127.0.0.1:3128) echo https_proxy=ok;; *) echo https_proxy=bad;; esac
case "${https_proxy:-}" in http://hobbs:*@127.0.0.1:3128) echo https_proxy_lower=ok;; *) echo https_proxy_lower=bad;; esac
echo "skill=$(cat $HOME/.claude/skills/e2e-skill/SKILL.md 2>&1 | head -1)"
echo "fw_agent=$(sed -n 2p /etc/claude-code/.claude/agents/researcher.md 2>&1)"
echo "custom_agent=$(sed -n 2p $HOME/.claude/agents/e2e-agent.md 2>&1)"
if [ -e $W/.claude ]; then echo ws_claude=yes; else echo ws_claude=no; fi
echo "hosthome_write=$(touch /home/dev/.probe-home 2>&1 && echo ok)"
echo from-container > $W/made-in-container
echo from-container > /home/dev/.hobbs/data/made-in-container
if out=$(hobbs memory add "e2e memory written from the container" 2>&1); then echo memory_add=ok; else echo "memory_add=failed: $out" | tr '\n' ' '; echo; fi
echo "vault_get=$(hobbs vault get e2e-token 2>&1 | tr '\n' ' ')"
echo "doctor_engine=$(hobbs doctor 2>&1 | grep -c '^fail  engine')"
echo pid=$$ > $W/.probe-ready
i=0; while [ ! -e $W/.inspected ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
cd $W/project && claude --probe
`

// TestSession checks the agent container's security properties, mounts,
// layering and secrets, as the issue lists them.
func TestSession(t *testing.T) {
	e := newEnv(t)
	e.removeVolume(t)

	// Host side: a vault entry mapped into the session, an instance skill,
	// a project with its own CLAUDE.md.
	if r := e.hobbs(nil, "vault", "init"); r.code != 0 {
		t.Fatalf("vault init: %s", r.stderr)
	}
	if r := e.hobbs([]byte(secretValue), "vault", "set", "e2e-token"); r.code != 0 {
		t.Fatalf("vault set: %s", r.stderr)
	}
	writeFile(t, filepath.Join(e.inst, "config.yaml"), "env:\n  E2E_SECRET: vault:e2e-token\n")
	writeFile(t, filepath.Join(e.inst, "skills", "e2e-skill", "SKILL.md"), "---\nname: e2e-skill\ndescription: e2e\n---\nbody\n")
	writeFile(t, filepath.Join(e.inst, "agents", "custom", "e2e-agent.md"), "---\nname: e2e-agent\ndescription: e2e\n---\nbody\n")
	writeFile(t, filepath.Join(e.ws, "project", "CLAUDE.md"), "# project instructions\n")
	writeFile(t, filepath.Join(e.ws, "probe.sh"), sessionProbe)
	// A line of the proxy's audit log, which the probe tries to alter.
	writeFile(t, filepath.Join(e.inst, "logs", "egress", "audit.log"), egressMarker)

	// 1. Seed the user's global CLAUDE.md on the state volume; the default
	// command is (fake) claude in the workspace.
	name := sessionName(t, "s1")
	r := e.hobbs(nil, e.runArgs(name, "sh", "-c", "echo '# user global' > ~/.claude/CLAUDE.md && claude")...)
	if r.code != 0 {
		t.Fatalf("seed run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stderr, "building") {
		t.Errorf("a run with unchanged inputs built the image:\n%s", r.stderr)
	}
	if !strings.Contains(r.stdout, `fake-claude: state {  "hasCompletedOnboarding": true`) {
		t.Errorf("Claude Code state not pre-seeded (onboarding would run):\n%s", r.stdout)
	}
	r = e.hobbs(nil, e.runArgs(sessionName(t, "s2"))...)
	if r.code != 0 {
		t.Fatalf("default command: exit %d\n%s", r.code, r.stderr)
	}
	for _, want := range []string{
		"fake-claude: cwd /home/dev/hobbs/workspace\n",
		"fake-claude: args \n",
		"fake-claude: claude.md managed /etc/claude-code/CLAUDE.md\n",
		"fake-claude: claude.md user /home/dev/.claude/CLAUDE.md\n",
		`"command": "hobbs memory context --format hook"`,
		`"SessionStart"`,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("default command output lacks %q:\n%s", want, r.stdout)
		}
	}

	// 2. The probe, inspected from outside while it waits.
	name = sessionName(t, "s3")
	c := e.command(nil, e.runArgs(name, "sh", "/home/dev/hobbs/workspace/probe.sh")...)
	var out, errb strings.Builder
	c.Stdout, c.Stderr = &out, &errb
	e.start(t, c)
	waitFor(t, 60*time.Second, "the probe", func() bool { return exists(filepath.Join(e.ws, ".probe-ready")) })
	inspectSecrets(t, name)
	// The vault is not in the container: looked at from the host through
	// the agent's mount namespace (root only), there is no vault/.
	if os.Getuid() == 0 {
		pid := docker(t, "inspect", "--format", "{{.State.Pid}}", name)
		if _, err := os.Lstat("/proc/" + pid + "/root/home/dev/.hobbs/vault"); !os.IsNotExist(err) {
			t.Errorf("vault/ inside the container: %v", err)
		}
	}
	if !exists(filepath.Join(e.inst, "vault", "keys", "identity.txt")) {
		t.Errorf("no identity on the host to hide (vault init changed?)")
	}
	writeFile(t, filepath.Join(e.ws, ".inspected"), "")
	err := c.Wait()
	if err != nil {
		t.Fatalf("probe run: %v\n%s\n%s", err, out.String(), errb.String())
	}
	p := kv(out.String())
	t.Logf("probe output:\n%s", out.String())

	check := func(key, want string) {
		t.Helper()
		if p[key] != want {
			t.Errorf("%s = %q, want %q", key, p[key], want)
		}
	}
	check("uid", strconv.Itoa(testUID))
	check("gid", strconv.Itoa(testGID))
	if p["uid"] == "0" {
		t.Errorf("agent runs as root")
	}
	check("capeff", "0000000000000000")
	check("capprm", "0000000000000000")
	check("nonewprivs", "1")
	// The framework (identity, skills, agents, managed settings) is
	// root-owned and read-only.
	check("identity_write", "denied")
	check("skills_write", "denied")
	check("agents_write", "denied")
	check("settings_write", "denied")
	check("identity_move", "denied")
	check("hobbs_move", "denied")
	// Only the instance's shares are there: no vault, no proxy audit log,
	// no .git, .locks or host audit log, and nothing can be added.
	check("vault_visible", "no")
	check("keys_write", "denied")
	check("egress_visible", "no")
	check("hidden_visible", "")
	check("root_write", "denied")
	// The files that steer the host (proxy policy, env mapping) are read-only.
	check("policy_write", "denied")
	check("config_replace", "denied")
	check("policy_rm", "denied")
	for _, k := range []string{"egress_append", "egress_truncate", "egress_create", "egress_move"} {
		check(k, "denied")
	}
	check("secret", secretValue)
	check("home", "/home/dev")
	check("hobbs_home", "/home/dev/.hobbs")
	check("context", "container")
	check("no_proxy", "localhost,127.0.0.1")
	check("https_proxy", "ok")
	check("https_proxy_lower", "ok")
	check("hosthome_write", "ok")
	check("skill", "---")
	// Framework sub-agents are managed files; the instance's skills and
	// agents are linked into the user scope, and nothing into the workspace.
	check("fw_agent", "name: researcher")
	check("custom_agent", "name: e2e-agent")
	check("ws_claude", "no")
	check("memory_add", "ok")
	check("doctor_engine", "0")
	if !strings.Contains(p["vault_get"], "only as config.yaml names them") || strings.Contains(p["vault_get"], secretValue) {
		t.Errorf("hobbs vault get inside: %q", p["vault_get"])
	}
	for _, want := range []string{
		"fake-claude: cwd /home/dev/hobbs/workspace/project\n",
		"fake-claude: claude.md project /home/dev/hobbs/workspace/project/CLAUDE.md\n",
		"fake-claude: claude.md managed /etc/claude-code/CLAUDE.md\n",
		"fake-claude: claude.md user /home/dev/.claude/CLAUDE.md\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("three CLAUDE.md layers: missing %q", strings.TrimSpace(want))
		}
	}

	// Files the agent wrote are the host user's.
	owned := func(p string) {
		t.Helper()
		fi, err := os.Stat(p)
		if err != nil {
			t.Errorf("%v", err)
			return
		}
		st := fi.Sys().(*syscall.Stat_t)
		if int(st.Uid) != testUID || int(st.Gid) != testGID {
			t.Errorf("%s owned by %d:%d, want %d:%d", p, st.Uid, st.Gid, testUID, testGID)
		}
	}
	owned(filepath.Join(e.ws, "made-in-container"))
	owned(filepath.Join(e.inst, "data", "made-in-container"))
	mems, _ := filepath.Glob(filepath.Join(e.inst, "memory", "active", "*.md"))
	found := false
	for _, m := range mems {
		b, _ := os.ReadFile(m)
		if strings.Contains(string(b), "e2e memory written from the container") {
			found = true
			owned(m)
		}
	}
	if !found {
		t.Errorf("the memory added inside is not in %s/memory/active (%v)", e.inst, mems)
	}
	if b, _ := os.ReadFile(filepath.Join(e.inst, "policy.yaml")); strings.Contains(string(b), "evil.example") {
		t.Errorf("the agent rewrote the instance policy.yaml")
	}
	if b, _ := os.ReadFile(filepath.Join(e.inst, "config.yaml")); strings.Contains(string(b), "vault:e2e-token}") {
		t.Errorf("the agent replaced the instance config.yaml")
	}
	if b, _ := os.ReadFile(filepath.Join(e.inst, "logs", "egress", "audit.log")); !strings.HasPrefix(string(b), egressMarker) ||
		strings.Contains(string(b), "forged") {
		t.Errorf("the proxy's audit log was altered from the agent:\n%s", b)
	}
	if _, err := os.Stat(filepath.Join(e.inst, "vault", "keys", "planted")); err == nil {
		t.Errorf("the agent planted a file in vault/keys")
	}
	if left := e.leftovers(t); len(left) > 0 {
		t.Errorf("left after the session: %v", left)
	}
	// The audit log names the session and the mapped variable, never its value.
	audit, _ := os.ReadFile(filepath.Join(e.inst, "logs", "audit.log"))
	if !strings.Contains(string(audit), `"session.start"`) || !strings.Contains(string(audit), "E2E_SECRET") {
		t.Errorf("audit log lacks the session start with the mapped name")
	}
	if strings.Contains(string(audit), secretValue) {
		t.Errorf("audit log holds the secret value")
	}
}

// inspectSecrets asserts that neither the mapped secret nor the proxy token
// appears anywhere in `docker inspect` of the running agent and proxy (the
// engine's configuration, which Docker also keeps on disk), nor in any
// process's argv on this host. The token is read from the session file
// inside the agent, where it is meant to be.
func inspectSecrets(t *testing.T, name string) {
	t.Helper()
	envFile := docker(t, "exec", name, "cat", "/run/hobbs-session/env")
	var env map[string]string
	if err := json.Unmarshal([]byte(envFile), &env); err != nil {
		t.Fatalf("session env file: %v\n%s", err, envFile)
	}
	token, _, _ := strings.Cut(strings.TrimPrefix(env["HTTP_PROXY"], "http://hobbs:"), "@")
	if len(token) < 32 || env["E2E_SECRET"] != secretValue {
		t.Fatalf("session env file lacks the token or the secret: %v", env)
	}
	for _, c := range []string{name, name + "-proxy"} {
		inspect := docker(t, "inspect", c)
		for what, v := range map[string]string{"secret": secretValue, "proxy token": token} {
			if strings.Contains(inspect, v) {
				t.Errorf("%s in docker inspect %s", what, c)
			}
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for what, v := range map[string]string{"secret": secretValue, "proxy token": token} {
			if strings.Contains(string(b), v) {
				t.Errorf("%s in the argv of %s: %q", what, p, strings.ReplaceAll(string(b), "\x00", " "))
			}
		}
	}
	// The proxy reads the same token from its own session file.
	proxyArgs := docker(t, "inspect", "--format", "{{.Path}} {{join .Args \" \"}}", name+"-proxy")
	if !strings.Contains(proxyArgs, "--auth-token-file /run/hobbs-session/token") {
		t.Errorf("proxy command line: %s", proxyArgs)
	}
}

// TestStaleImage: the containers are created while the image is checked.
// When the check finds the image stale (here: the tag names the bare test
// base, with no Hobbs layer), hobbs run builds it, removes the containers
// made from the old one and creates them again: the command runs in the
// new image, and nothing of the first ones is left.
func TestStaleImage(t *testing.T) {
	e := newEnv(t)
	e.removeVolume(t)
	stale := "hobbs-e2e-" + runID + ":stale"
	docker(t, "tag", baseImage, stale)
	defer exec.Command("docker", "image", "rm", "-f", stale).Run()
	r := hobbsAs(nil, e.home, []string{"HOBBS_HOME=" + e.inst, "HOBBS_TRACE=1"}, "run", "--image", stale,
		"--base", baseImage, "--workspace", e.ws, "--name", sessionName(t, "stale"), "--",
		"sh", "-c", "test -r /etc/claude-code/CLAUDE.md && echo in-the-new-image")
	if r.code != 0 || !strings.Contains(r.stdout, "in-the-new-image") {
		t.Fatalf("run on a stale image: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"building", "creating the containers again"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if left := e.leftovers(t); len(left) > 0 {
		t.Errorf("left after the session: %v", left)
	}
}
