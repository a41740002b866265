package vault

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/doctor"
	"github.com/hobbs-agent/hobbs/src/errs"
)

func TestSessionEnv(t *testing.T) {
	v := newTestVault(t)
	mustSet(t, v, "github-token", "ghp_session_value")
	mustSet(t, v, "multi", "line1\nline2")
	cfg, err := config.Parse("config.yaml", []byte("env:\n  GITHUB_TOKEN: vault:github-token\n  NOTES: vault:multi\n"))
	if err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, v.In.Root)
	env, err := SessionEnv(v.In, cfg.VaultEnv(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(env, "|") != "GITHUB_TOKEN=ghp_session_value|NOTES=line1\nline2" {
		t.Fatalf("env = %q", env)
	}
	// Nothing but the audit log changed, and it holds names, not values.
	after := snapshot(t, v.In.Root)
	for p, data := range after {
		if before[p] != data && !strings.HasSuffix(p, "audit.log") && !strings.Contains(p, ".locks") {
			t.Errorf("SessionEnv changed %s", p)
		}
		if strings.Contains(data, "ghp_session_value") {
			t.Errorf("value written to %s", p)
		}
	}
	audit := after[v.In.AuditLog()]
	if !strings.Contains(audit, `"event":"vault.session","subject":"github-token","outcome":"ok","detail":{"env":"GITHUB_TOKEN"}`) {
		t.Fatalf("session not audited:\n%s", audit)
	}

	// Empty mapping: no keys needed at all.
	os.Rename(v.In.VaultIdentity(), v.In.VaultIdentity()+".away")
	if env, err := SessionEnv(v.In, nil, nil); err != nil || env != nil {
		t.Fatalf("empty mapping: %v %v", env, err)
	}
	// Missing identity: names the variable and the entry.
	_, err = SessionEnv(v.In, [][2]string{{"GITHUB_TOKEN", "github-token"}}, nil)
	if err == nil || !strings.Contains(err.Error(), "GITHUB_TOKEN") || !strings.Contains(err.Error(), "github-token") {
		t.Fatalf("missing identity: %v", err)
	}
	os.Rename(v.In.VaultIdentity()+".away", v.In.VaultIdentity())

	// A missing entry fails the whole call, naming variable and entry.
	env, err = SessionEnv(v.In, [][2]string{{"GITHUB_TOKEN", "github-token"}, {"API_KEY", "absent"}}, nil)
	if env != nil || errs.Code(err) != errs.Failure || !strings.Contains(err.Error(), "env API_KEY (vault:absent)") ||
		!strings.Contains(err.Error(), "not found") {
		t.Fatalf("missing entry: %v %v", env, err)
	}
	// Bad names never reach the file system.
	for _, m := range [][2]string{{"BAD-NAME", "github-token"}, {"1X", "github-token"}, {"X", "../keys/identity"}, {"X", ""}} {
		if _, err := SessionEnv(v.In, [][2]string{m}, nil); errs.Code(err) != errs.Usage {
			t.Errorf("mapping %q: %v", m, err)
		}
	}
	// A NUL cannot go into an environment variable.
	mustSet(t, v, "nul", "a\x00b")
	if _, err := SessionEnv(v.In, [][2]string{{"X", "nul"}}, nil); err == nil || !strings.Contains(err.Error(), "NUL") {
		t.Fatalf("NUL value: %v", err)
	}
	// Passphrase-protected identity: the Vault method takes the callback.
	p := bareVault(t)
	p.Passphrase = func(string, bool) ([]byte, error) { return []byte("pw"), nil }
	if _, err := p.Init(InitOptions{Passphrase: true}); err != nil {
		t.Fatal(err)
	}
	mustSet(t, p, "k", "protected-value")
	q := Open(p.In)
	q.Passphrase = p.Passphrase
	if env, err := q.SessionEnv([][2]string{{"K", "k"}}); err != nil || env[0] != "K=protected-value" {
		t.Fatalf("protected: %v %v", env, err)
	}
	// The package's SessionEnv unlocks it with the function it is given;
	// without one, only a passphrase file would.
	t.Setenv(EnvPassphraseFile, "")
	if env, err := SessionEnv(p.In, [][2]string{{"K", "k"}}, p.Passphrase); err != nil || env[0] != "K=protected-value" {
		t.Fatalf("protected, through SessionEnv: %v %v", env, err)
	}
	if _, err := SessionEnv(p.In, [][2]string{{"K", "k"}}, nil); errs.AdviceOf(err).Kind != NoTerminal {
		t.Fatalf("protected, nothing to ask with: %v", err)
	}
}

func snapshot(t *testing.T, root string) map[string]string {
	out := map[string]string{}
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			b, _ := os.ReadFile(p)
			out[p] = string(b)
		}
		return nil
	})
	return out
}

// The name rule is the one config.yaml applies to vault:NAME, so every
// mapping that validates can be stored, and the reverse.
func TestNameRuleMatchesConfig(t *testing.T) {
	for _, n := range []string{"a", "github-token", "a.b_c-d", "0x", strings.Repeat("a", 64), strings.Repeat("a", 65),
		"A", "-a", ".a", "a/b", "a b", "é"} {
		_, err := config.Parse("c.yaml", []byte("env:\n  X: \"vault:"+n+"\"\n"))
		if (err == nil) != ValidName(n) {
			t.Errorf("%q: config accepts=%v, vault accepts=%v", n, err == nil, ValidName(n))
		}
	}
}

func runChecks(t *testing.T, v *Vault, deep bool) map[string][]doctor.Result {
	t.Helper()
	env := &doctor.Env{Instance: v.In, Deep: deep}
	out := map[string][]doctor.Result{}
	checks := []doctor.Check{{Name: "vault.keys", Run: DoctorKeys}, {Name: "vault.entries", Run: DoctorEntries}}
	for _, r := range doctor.Run(context.Background(), env, checks) {
		if strings.HasPrefix(r.Check, "vault.") {
			out[r.Check] = append(out[r.Check], r)
		}
	}
	return out
}

func statusOf(rs []doctor.Result) string {
	worst := "ok"
	for _, r := range rs {
		if r.Status == doctor.Fail || (r.Status == doctor.Warn && worst == "ok") {
			worst = string(r.Status)
		}
	}
	return worst
}

func TestDoctorChecks(t *testing.T) {
	v := bareVault(t)
	got := runChecks(t, v, true)
	if statusOf(got["vault.keys"]) != "ok" || statusOf(got["vault.entries"]) != "ok" {
		t.Fatalf("uninitialised vault: %+v", got)
	}
	if _, err := v.Init(InitOptions{}); err != nil {
		t.Fatal(err)
	}
	mustSet(t, v, "a", "1")
	got = runChecks(t, v, true)
	if statusOf(got["vault.keys"]) != "ok" || !strings.Contains(got["vault.entries"][0].Message, "1 entry decrypted") {
		t.Fatalf("healthy: %+v", got)
	}
	// A corrupt entry: only --deep finds it, and names it.
	os.WriteFile(v.In.VaultEntry("bad"), []byte("junk"), 0o600)
	if got = runChecks(t, v, false); statusOf(got["vault.entries"]) != "ok" {
		t.Fatalf("shallow: %+v", got)
	}
	got = runChecks(t, v, true)
	if statusOf(got["vault.entries"]) != "fail" || !strings.Contains(got["vault.entries"][0].Message, `"bad"`) {
		t.Fatalf("deep corrupt: %+v", got)
	}
	os.Remove(v.In.VaultEntry("bad"))
	// A stray file is a warning.
	os.WriteFile(filepath.Join(v.In.VaultData(), "notes.txt"), nil, 0o600)
	if got = runChecks(t, v, false); statusOf(got["vault.entries"]) != "warn" {
		t.Fatalf("stray file: %+v", got)
	}
	os.Remove(filepath.Join(v.In.VaultData(), "notes.txt"))
	// Damaged identity, unparsable recipients.
	id, _ := os.ReadFile(v.In.VaultIdentity())
	os.WriteFile(v.In.VaultIdentity(), []byte("# created: x\nAGE-SECRET-KEY-1BROKEN\n"), 0o600)
	if got = runChecks(t, v, false); statusOf(got["vault.keys"]) != "fail" {
		t.Fatalf("broken identity: %+v", got)
	}
	os.WriteFile(v.In.VaultIdentity(), id, 0o600)
	rs, _ := os.ReadFile(v.In.VaultRecipients())
	os.WriteFile(v.In.VaultRecipients(), append(rs, []byte("not-a-key\n")...), 0o600)
	got = runChecks(t, v, false)
	if statusOf(got["vault.keys"]) != "fail" || !strings.Contains(resultText(got["vault.keys"]), "recipients.txt:") {
		t.Fatalf("broken recipients: %+v", got)
	}
	// And the file was not rewritten.
	if b, _ := os.ReadFile(v.In.VaultRecipients()); !strings.HasSuffix(string(b), "not-a-key\n") {
		t.Fatal("unparsable recipients.txt was rewritten")
	}
	os.WriteFile(v.In.VaultRecipients(), rs, 0o600)
	// Pending rotation: a warning.
	v.Hook = func(s string) error {
		if s == "commit" {
			return os.ErrClosed
		}
		return nil
	}
	v.Rotate(RotateOptions{})
	if got = runChecks(t, v, true); statusOf(got["vault.keys"]) != "warn" || statusOf(got["vault.entries"]) != "ok" {
		t.Fatalf("pending rotation: %+v", got)
	}
	// Keys visible inside the container: the launcher failed to cover them.
	t.Setenv("HOBBS_CONTEXT", "container")
	if got = runChecks(t, v, false); statusOf(got["vault.keys"]) != "fail" ||
		!strings.Contains(got["vault.keys"][0].Message, "visible inside the agent container") {
		t.Fatalf("keys visible in container: %+v", got)
	}
	t.Setenv("HOBBS_CONTEXT", "")
	// Entries with no identity: fail.
	os.RemoveAll(v.In.VaultKeys())
	if got = runChecks(t, v, false); statusOf(got["vault.keys"]) != "fail" {
		t.Fatalf("lost identity: %+v", got)
	}
	// ... which is expected inside the container.
	t.Setenv("HOBBS_CONTEXT", "container")
	defer os.MkdirAll(v.In.VaultKeys(), 0o700)
	if got = runChecks(t, v, true); statusOf(got["vault.keys"]) != "ok" || statusOf(got["vault.entries"]) != "ok" {
		t.Fatalf("container: %+v", got)
	}
}

func resultText(rs []doctor.Result) string {
	var b strings.Builder
	for _, r := range rs {
		b.WriteString(r.Message + "\n")
	}
	return b.String()
}

// config.yaml's env mapping checks vault entry names with its own pattern
// (config cannot import vault); both must accept exactly the same names.
func TestConfigAcceptsExactlyVaultNames(t *testing.T) {
	names := []string{"a", "0", "github-token", "smtp.password", "a_b", "x" + strings.Repeat("y", 63),
		"x" + strings.Repeat("y", 64), "", "-a", ".a", "_a", "A", "a/b", "../a", "a b", "é", "a:b", "a\x00"}
	for c := 'a' - 40; c < 'z'+10; c++ {
		names = append(names, "a"+string(c), string(c))
	}
	for _, n := range names {
		_, err := config.Parse("config.yaml", []byte("env:\n  X: "+strconv.Quote("vault:"+n)+"\n"))
		if cfgOK := err == nil; cfgOK != ValidName(n) {
			t.Errorf("name %q: config accepts %v, vault.ValidName %v (%v)", n, cfgOK, ValidName(n), err)
		}
	}
}
