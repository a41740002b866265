package vault

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"filippo.io/age"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/safefile"
	"github.com/hobbs-agent/hobbs/src/tooltest"
)

func init() { scryptWorkFactor = 10 } // fast passphrase tests; real files use age's default

// newTestVault makes an instance with the vault layout and an initialised
// vault.
func newTestVault(t *testing.T) *Vault {
	t.Helper()
	v := bareVault(t)
	if _, err := v.Init(InitOptions{}); err != nil {
		t.Fatal(err)
	}
	return v
}

func bareVault(t *testing.T) *Vault {
	t.Helper()
	t.Setenv("HOBBS_CONTEXT", "")
	in, err := instance.At(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{in.Logs(), in.VaultKeys(), in.VaultData()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	v := Open(in)
	v.Passphrase = func(string, bool) ([]byte, error) { return nil, errors.New("test: no passphrase expected") }
	return v
}

func mustSet(t *testing.T, v *Vault, name, val string) {
	t.Helper()
	if _, err := v.Set(name, []byte(val)); err != nil {
		t.Fatalf("set %s: %v", name, err)
	}
}

func mustGet(t *testing.T, v *Vault, name string) string {
	t.Helper()
	b, err := v.Get(name)
	if err != nil {
		t.Fatalf("get %s: %v", name, err)
	}
	return string(b)
}

// decryptWith decrypts entry name with the identity file at idPath alone
// (plain identity files only).
func decryptWith(t *testing.T, v *Vault, idPath, name string) (string, error) {
	t.Helper()
	data, err := os.ReadFile(idPath)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := age.ParseIdentities(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", idPath, err)
	}
	ct, err := os.ReadFile(v.In.VaultEntry(name))
	if err != nil {
		t.Fatal(err)
	}
	r, err := age.Decrypt(bytes.NewReader(ct), ids...)
	if err != nil {
		return "", err
	}
	b, err := io.ReadAll(r)
	return string(b), err
}

func TestInitLayout(t *testing.T) {
	v := newTestVault(t)
	data, err := os.ReadFile(v.In.VaultIdentity())
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "# created: ") || !strings.HasPrefix(lines[1], "# public key: age1") ||
		!strings.HasPrefix(lines[2], "AGE-SECRET-KEY-1") {
		t.Fatalf("identity file not in age-keygen layout:\n%s", data)
	}
	id, err := age.ParseX25519Identity(lines[2])
	if err != nil {
		t.Fatal(err)
	}
	if lines[1] != "# public key: "+id.Recipient().String() {
		t.Fatalf("public key comment %q does not match the key", lines[1])
	}
	for _, p := range []string{v.In.VaultIdentity(), v.In.VaultRecipients()} {
		fi, _ := os.Stat(p)
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %o", p, fi.Mode().Perm())
		}
	}
	rs, err := v.Recipients()
	if err != nil || len(rs) != 1 || rs[0].Key != id.Recipient().String() || rs[0].Label != SelfLabel {
		t.Fatalf("recipients = %+v, %v", rs, err)
	}
	// Again: nothing changes.
	res, err := v.Init(InitOptions{})
	if err != nil || !res.Existing || res.PublicKey != id.Recipient().String() {
		t.Fatalf("second init = %+v, %v", res, err)
	}
	again, _ := os.ReadFile(v.In.VaultIdentity())
	if !bytes.Equal(again, data) {
		t.Fatal("second init changed the identity")
	}
}

func TestInitRefusesOrphanEntries(t *testing.T) {
	v := newTestVault(t)
	mustSet(t, v, "a", "1")
	os.Remove(v.In.VaultIdentity())
	os.Remove(v.In.VaultRecipients())
	_, err := v.Init(InitOptions{})
	if err == nil || !strings.Contains(err.Error(), "no identity to read them") {
		t.Fatalf("init over orphan entries: %v", err)
	}
	if _, err := v.Init(InitOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
}

func TestSetGetExactBytes(t *testing.T) {
	v := newTestVault(t)
	for name, val := range map[string]string{
		"plain":   "s3cr3t",
		"newline": "line\n",
		"binary":  "\x00\xff\x01 bytes\r\n",
		"utf8":    "pässwörd 🔑",
	} {
		created, err := v.Set(name, []byte(val))
		if err != nil || !created {
			t.Fatalf("set %s: %v %v", name, created, err)
		}
		if got := mustGet(t, v, name); got != val {
			t.Errorf("%s: got %q want %q", name, got, val)
		}
	}
	created, err := v.Set("plain", []byte("other"))
	if err != nil || created {
		t.Fatalf("overwrite: created=%v err=%v", created, err)
	}
	if got := mustGet(t, v, "plain"); got != "other" {
		t.Fatalf("overwrite: got %q", got)
	}
	big := bytes.Repeat([]byte("x"), MaxValueSize)
	if _, err := v.Set("big", big); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Set("huge", append(big, 'y')); errs.Code(err) != errs.Usage {
		t.Fatalf("over-size value: %v", err)
	}
	if _, err := v.Set("empty", nil); errs.Code(err) != errs.Usage {
		t.Fatalf("empty value: %v", err)
	}
}

func TestNamesAttacks(t *testing.T) {
	v := newTestVault(t)
	bad := []string{
		"", ".", "..", "../x", "../../etc/passwd", "a/b", "a\\b", "/abs", ".hidden", "-flag", "_x",
		"a\x00b", "x\n", "UPPER", "Github", strings.Repeat("a", 65), "ｇithub", "gіthub" /* Cyrillic і */, "a\u200bb",
		"a b", "a:b", "a*b", "~x", "$x", "a%2fb",
	}
	for _, n := range bad {
		if ValidName(n) {
			t.Errorf("ValidName(%q) = true", n)
		}
		if _, err := v.Set(n, []byte("v")); errs.Code(err) != errs.Usage || !strings.Contains(err.Error(), NameRule) {
			t.Errorf("set %q: %v (want usage error with the rule)", n, err)
		}
		if _, err := v.Get(n); errs.Code(err) != errs.Usage {
			t.Errorf("get %q: %v", n, err)
		}
		if _, err := v.Remove(n, true); errs.Code(err) != errs.Usage {
			t.Errorf("rm %q: %v", n, err)
		}
		if err := v.Rename("ok", n); errs.Code(err) != errs.Usage {
			t.Errorf("rename to %q: %v", n, err)
		}
	}
	for _, n := range []string{"a", "0", "github-token", "smtp.password", "a_b", "a..b", strings.Repeat("z", 64)} {
		if !ValidName(n) {
			t.Errorf("ValidName(%q) = false", n)
		}
	}
	// Nothing escaped vault/data.
	ents, _ := os.ReadDir(v.In.Vault())
	for _, e := range ents {
		if e.Name() != "keys" && e.Name() != "data" {
			t.Errorf("unexpected %s in vault/", e.Name())
		}
	}
}

func TestErrorsNameTheEntry(t *testing.T) {
	v := newTestVault(t)
	mustSet(t, v, "tok", "value-1")

	_, err := v.Get("nope")
	if !errors.Is(err, ErrNotFound) || errs.Code(err) != errs.Failure || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("missing entry: %v", err)
	}

	// Corrupt file: exit 1, names the entry, never echoes the file's bytes.
	os.WriteFile(v.In.VaultEntry("corrupt"), []byte("PLAINTEXT-LEAK"), 0o600)
	_, err = v.Get("corrupt")
	if errs.Code(err) != errs.Failure || !strings.Contains(err.Error(), `"corrupt"`) || strings.Contains(err.Error(), "PLAINTEXT") {
		t.Fatalf("corrupt: %v", err)
	}
	// Truncated ciphertext.
	ct, _ := os.ReadFile(v.In.VaultEntry("tok"))
	os.WriteFile(v.In.VaultEntry("trunc"), ct[:len(ct)-5], 0o600)
	if _, err = v.Get("trunc"); errs.Code(err) != errs.Failure || !strings.Contains(err.Error(), `"trunc"`) {
		t.Fatalf("truncated: %v", err)
	}

	// Wrong identity: an entry encrypted to another key.
	other, _ := age.GenerateX25519Identity()
	foreign, _ := encrypt([]byte("x"), []string{other.Recipient().String()})
	os.WriteFile(v.In.VaultEntry("foreign"), foreign, 0o600)
	_, err = v.Get("foreign")
	if errs.Code(err) != errs.Failure || !strings.Contains(err.Error(), `"foreign"`) || !strings.Contains(err.Error(), "not encrypted to this vault's identity") {
		t.Fatalf("wrong identity: %v", err)
	}

	// Missing key on the host.
	os.Rename(v.In.VaultIdentity(), v.In.VaultIdentity()+".bak")
	_, err = v.Get("tok")
	if errs.Code(err) != errs.Failure || !strings.Contains(err.Error(), `"tok"`) || !strings.Contains(err.Error(), "no vault identity") {
		t.Fatalf("missing key: %v", err)
	}
	if a := errs.AdviceOf(err); a.Kind != NoIdentity {
		t.Fatalf("missing key advice: %+v", a)
	}
	// Missing key inside the container: how secrets reach a session instead.
	t.Setenv("HOBBS_CONTEXT", "container")
	_, err = v.Get("tok")
	if errs.Code(err) != errs.Failure || !strings.Contains(err.Error(), "not available inside the agent container") ||
		errs.AdviceOf(err).Kind != UnavailableInContainer {
		t.Fatalf("container: %v / %+v", err, errs.AdviceOf(err))
	}
	if _, err := v.Set("tok", []byte("x")); err == nil || errs.AdviceOf(err).Kind != UnavailableInContainer {
		t.Fatalf("container set: %v", err)
	}
	if _, err := v.Init(InitOptions{}); err == nil || !strings.Contains(err.Error(), "runs on the host") {
		t.Fatalf("container init: %v", err)
	}
	// list works in the container (names only).
	if es, _, err := v.List(); err != nil || len(es) == 0 {
		t.Fatalf("container list: %v %v", es, err)
	}
}

func TestSymlinkAndSpecialFileAttacks(t *testing.T) {
	v := newTestVault(t)
	mustSet(t, v, "tok", "value")
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("host file"), 0o600)

	// An entry that is a symlink to a host file is not followed.
	os.Symlink(filepath.Join(outside, "secret.txt"), v.In.VaultEntry("link"))
	if _, err := v.Get("link"); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("symlinked entry: %v", err)
	}
	// A FIFO does not block.
	if err := syscall.Mkfifo(v.In.VaultEntry("fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Get("fifo"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("fifo entry: %v", err)
	}
	es, ignored, err := v.List()
	if err != nil || len(es) != 1 || len(ignored) != 2 {
		t.Fatalf("list with planted files: %v %v %v", es, ignored, err)
	}
	// Setting over a planted symlink replaces the link, never writes the target.
	mustSet(t, v, "link", "new")
	if b, _ := os.ReadFile(filepath.Join(outside, "secret.txt")); string(b) != "host file" {
		t.Fatal("set wrote through a symlink")
	}
	// rename onto a planted name is refused (never replaces).
	os.Symlink(filepath.Join(outside, "secret.txt"), v.In.VaultEntry("planted"))
	if err := v.Rename("tok", "planted"); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("rename onto planted: %v", err)
	}

	// vault/data replaced by a symlink: every operation refuses.
	os.Rename(v.In.VaultData(), v.In.VaultData()+".real")
	os.Symlink(outside, v.In.VaultData())
	for what, err := range map[string]error{
		"set":  second(v.Set("x", []byte("v"))),
		"get":  second(v.Get("tok")),
		"list": third(v.List()),
		"rm":   second(v.Remove("tok", true)),
	} {
		if err == nil || !strings.Contains(err.Error(), "not a plain directory") {
			t.Errorf("%s through symlinked vault/data: %v", what, err)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "x.age")); err == nil {
		t.Fatal("set wrote into the symlink target")
	}
}

// The whole vault/ moved aside and replaced by an absolute symlink to it
// (what an agent that could write the instance root might leave): every
// operation and the doctor refuse with the layer's error, and nothing is
// read from or written to the link's target.
func TestVaultDirSymlinkRefused(t *testing.T) {
	v := newTestVault(t)
	mustSet(t, v, "tok", "value")
	moved := filepath.Join(t.TempDir(), "vault")
	if err := os.Rename(v.In.Vault(), moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(moved, v.In.Vault()); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, moved)

	for what, err := range map[string]error{
		"get":        second(v.Get("tok")),
		"list":       third(v.List()),
		"set":        second(v.Set("x", []byte("v"))),
		"rm":         second(v.Remove("tok", false)),
		"rename":     v.Rename("tok", "tok2"),
		"rotate":     second(v.Rotate(RotateOptions{})),
		"recipients": second(v.Recipients()),
		"session":    second(v.SessionEnv([][2]string{{"TOK", "tok"}})),
	} {
		if !errors.Is(err, safefile.ErrUnsafe) || !strings.Contains(err.Error(), v.In.Vault()+" is a symbolic link") {
			t.Errorf("%s through a symlinked vault/: %v", what, err)
		}
	}
	// init inspects vault/ itself first.
	if _, err := v.Init(InitOptions{}); err == nil || !strings.Contains(err.Error(), "vault is not a plain directory") {
		t.Errorf("init through a symlinked vault/: %v", err)
	}
	got := runChecks(t, v, true)
	if statusOf(got["vault.keys"]) != "fail" || !strings.Contains(resultText(got["vault.keys"]), "is a symbolic link") {
		t.Errorf("doctor vault.keys: %+v", got["vault.keys"])
	}
	if statusOf(got["vault.entries"]) != "fail" || !strings.Contains(resultText(got["vault.entries"]), "is a symbolic link") {
		t.Errorf("doctor vault.entries: %+v", got["vault.entries"])
	}
	if after := snapshot(t, moved); !maps.Equal(before, after) {
		t.Fatalf("the link's target changed:\n before %v\n after  %v", before, after)
	}
	if fi, err := os.Lstat(v.In.Vault()); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("the planted link itself was replaced: %v %v", fi, err)
	}
}

func second[A any](_ A, err error) error        { return err }
func third[A, B any](_ A, _ B, err error) error { return err }

func TestRemoveAndRename(t *testing.T) {
	v := newTestVault(t)
	mustSet(t, v, "a", "va")
	mustSet(t, v, "b", "vb")
	if err := v.Rename("a", "b"); err == nil {
		t.Fatal("rename over an existing entry succeeded")
	}
	if err := v.Rename("a", "c"); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, v, "c"); got != "va" {
		t.Fatalf("renamed value %q", got)
	}
	if _, err := v.Get("a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("old name still there: %v", err)
	}
	if err := v.Rename("zz", "yy"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("rename missing: %v", err)
	}
	moved, err := v.Remove("c", false)
	if err != nil || !strings.HasPrefix(moved, "vault/removed/c.") {
		t.Fatalf("rm: %q %v", moved, err)
	}
	if _, err := os.Stat(filepath.Join(v.In.Root, moved)); err != nil {
		t.Fatal("removed entry not kept")
	}
	if _, err := v.Remove("b", true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(v.In.VaultEntry("b")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("purged entry still there")
	}
	if _, err := v.Remove("b", true); !errors.Is(err, ErrNotFound) {
		t.Fatalf("rm missing: %v", err)
	}
}

func TestAuditNamesNeverValues(t *testing.T) {
	v := newTestVault(t)
	logPath := v.Audit.Path // the host's log: In.AuditLog() names the agent's once in the container
	const val = "v4lue-that-must-not-be-logged"
	mustSet(t, v, "tok", val)
	mustGet(t, v, "tok")
	v.Get("missing")
	v.Rename("tok", "tok2")
	v.Remove("tok2", false)
	t.Setenv("HOBBS_CONTEXT", "container")
	v.List()
	v.Get("x")
	data, _ := os.ReadFile(logPath)
	if strings.Contains(string(data), val) {
		t.Fatal("value in the audit log")
	}
	var events []string
	var last map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var e map[string]any
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		events = append(events, e["event"].(string)+":"+e["subject"].(string)+":"+e["outcome"].(string))
		last = e
	}
	want := "vault.init:vault/keys/identity.txt:ok vault.set:tok:ok vault.get:tok:ok vault.get:missing:error " +
		"vault.rename:tok:ok vault.rm:tok2:ok vault.get:x:error"
	if strings.Join(events, " ") != want {
		t.Fatalf("audit events:\n got %s\nwant %s", strings.Join(events, " "), want)
	}
	if !strings.HasPrefix(last["actor"].(string), "container:") {
		t.Fatalf("actor in container = %v", last["actor"])
	}
}

func TestPassphraseIdentity(t *testing.T) {
	v := bareVault(t)
	asked := 0
	v.Passphrase = func(prompt string, confirm bool) ([]byte, error) {
		asked++
		return []byte("correct horse"), nil
	}
	if _, err := v.Init(InitOptions{Passphrase: true}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(v.In.VaultIdentity())
	if !isProtected(data) || bytes.Contains(data, []byte("AGE-SECRET-KEY")) {
		t.Fatalf("identity not protected:\n%s", data)
	}
	// A fresh process (new Vault) asks once and reuses it.
	v2 := Open(v.In)
	v2.Passphrase = v.Passphrase
	mustSet(t, v2, "tok", "pp-value")
	if got := mustGet(t, v2, "tok"); got != "pp-value" {
		t.Fatal(got)
	}
	v3 := Open(v.In)
	v3.Passphrase = func(string, bool) ([]byte, error) { return []byte("wrong"), nil }
	if _, err := v3.Get("tok"); errs.Code(err) != errs.Failure || !strings.Contains(err.Error(), "wrong passphrase") {
		t.Fatalf("wrong passphrase: %v", err)
	}
	// Passphrase from the documented file.
	pf := filepath.Join(t.TempDir(), "pass")
	os.WriteFile(pf, []byte("correct horse\n"), 0o600)
	t.Setenv(EnvPassphraseFile, pf)
	v4 := Open(v.In)
	if got, err := v4.Get("tok"); err != nil || string(got) != "pp-value" {
		t.Fatalf("passphrase file: %q %v", got, err)
	}
	// Rotation keeps the protection and the passphrase.
	if _, err := v4.Rotate(RotateOptions{}); err != nil {
		t.Fatal(err)
	}
	data, _ = os.ReadFile(v.In.VaultIdentity())
	if !isProtected(data) {
		t.Fatal("rotated identity lost its passphrase")
	}
	if got := mustGet(t, Open(v.In), "tok"); got != "pp-value" {
		t.Fatal(got)
	}
	// Init --passphrase over a plain identity is refused.
	p := newTestVault(t)
	if _, err := p.Init(InitOptions{Passphrase: true}); err == nil {
		t.Fatal("init --passphrase over a plain identity succeeded")
	}
}

// Without a passphrase file and with nowhere to ask, the passphrase is
// refused with advice naming the file's variable; an asker's answer is
// taken, an empty one refused; the file, when named, wins over the asker.
func TestPassphrases(t *testing.T) {
	t.Setenv(EnvPassphraseFile, "")
	for _, pass := range []PassphraseFunc{FilePassphrase, Passphrases(nil),
		Passphrases(func(string, bool) ([]byte, error) { return nil, ErrNoTerminal })} {
		_, err := pass("x", false)
		if a := errs.AdviceOf(err); err == nil || a.Kind != NoTerminal || a.Facts["env"] != EnvPassphraseFile {
			t.Fatalf("no terminal: %v (%+v)", err, a)
		}
	}
	ask := Passphrases(func(string, bool) ([]byte, error) { return []byte("pw"), nil })
	if p, err := ask("x", true); err != nil || string(p) != "pw" {
		t.Fatalf("asked: %q %v", p, err)
	}
	if _, err := Passphrases(func(string, bool) ([]byte, error) { return nil, nil })("x", false); err == nil {
		t.Fatal("an empty passphrase was taken")
	}
	f := filepath.Join(t.TempDir(), "pass")
	if err := os.WriteFile(f, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvPassphraseFile, f)
	for _, pass := range []PassphraseFunc{FilePassphrase, ask} {
		if p, err := pass("x", false); err != nil || string(p) != "from-file" {
			t.Fatalf("the file: %q %v", p, err)
		}
	}
}

// ageCLI returns the age binary; CI installs it (.ci/run), so it is required
// there (tooltest).
func ageCLI(t *testing.T) string {
	t.Helper()
	return tooltest.Need(t, "age")
}

func TestAgeCLIInterop(t *testing.T) {
	bin := ageCLI(t)
	v := newTestVault(t)
	mustSet(t, v, "github-token", "ghp_interop\nwith newline")
	out, err := exec.Command(bin, "-d", "-i", v.In.VaultIdentity(), v.In.VaultEntry("github-token")).Output()
	if err != nil || string(out) != "ghp_interop\nwith newline" {
		t.Fatalf("age -d: %q %v", out, err)
	}
	// And the other way: age -R recipients.txt writes an entry hobbs reads.
	cmd := exec.Command(bin, "-e", "-R", v.In.VaultRecipients(), "-o", v.In.VaultEntry("by-age"))
	cmd.Stdin = strings.NewReader("from the age cli")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("age -e: %s %v", out, err)
	}
	if got := mustGet(t, v, "by-age"); got != "from the age cli" {
		t.Fatal(got)
	}
}

func TestRenameFinishesInterrupted(t *testing.T) {
	v := newTestVault(t)
	mustSet(t, v, "a", "va")
	// A rename that stopped after the link: both names, one file.
	if err := os.Link(v.In.VaultEntry("a"), v.In.VaultEntry("b")); err != nil {
		t.Fatal(err)
	}
	if err := v.Rename("a", "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(v.In.VaultEntry("a")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("old name kept")
	}
	if got := mustGet(t, v, "b"); got != "va" {
		t.Fatal(got)
	}
}

// An audit record that cannot be written is reported to AuditFailed; the
// operation itself stands.
func TestAuditFailureIsReported(t *testing.T) {
	v := newTestVault(t)
	if err := os.Remove(v.In.AuditLog()); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(v.In.AuditLog(), 0o700); err != nil { // a directory cannot be appended to
		t.Fatal(err)
	}
	var failed []error
	v.AuditFailed = func(err error) { failed = append(failed, err) }
	mustSet(t, v, "token", "value")
	if len(failed) != 1 {
		t.Fatalf("AuditFailed called %d times, want 1: %v", len(failed), failed)
	}
	if got := mustGet(t, v, "token"); got != "value" {
		t.Fatalf("get after a failed audit: %q", got)
	}
}
