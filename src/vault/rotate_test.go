package vault

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"filippo.io/age"
)

var rotateValues = map[string]string{"alpha": "value-alpha", "beta": "value-beta\n", "gamma": "value-gamma"}

// rotationFixture is a vault with three entries and one extra recipient
// (a backup key whose identity file is returned).
func rotationFixture(t *testing.T) (v *Vault, backup string, orig []byte) {
	t.Helper()
	v = newTestVault(t)
	b, _ := age.GenerateX25519Identity()
	backup = filepath.Join(t.TempDir(), "backup.txt")
	os.WriteFile(backup, formatIdentity(b, v.now()), 0o600)
	if err := v.AddRecipient(b.Recipient().String(), "backup"); err != nil {
		t.Fatal(err)
	}
	for n, val := range rotateValues {
		mustSet(t, v, n, val)
	}
	orig, _ = os.ReadFile(v.In.VaultIdentity())
	return v, backup, orig
}

// rotateSteps records the steps of a complete rotation of the fixture.
func rotateSteps(t *testing.T) []string {
	v, _, _ := rotationFixture(t)
	var steps []string
	v.Hook = func(s string) error { steps = append(steps, s); return nil }
	if _, err := v.Rotate(RotateOptions{}); err != nil {
		t.Fatal(err)
	}
	return steps
}

// assertDecryptableOnRecord: every entry decrypts with identity.txt alone,
// and with the backup recipient's key, with the right value.
func assertDecryptableOnRecord(t *testing.T, v *Vault, backup, when string) {
	t.Helper()
	for n, want := range rotateValues {
		got, err := decryptWith(t, v, v.In.VaultIdentity(), n)
		if err != nil || got != want {
			t.Fatalf("%s: %s with identity.txt: %q %v", when, n, got, err)
		}
		if got, err := decryptWith(t, v, backup, n); err != nil || got != want {
			t.Fatalf("%s: %s with the backup key: %q %v", when, n, got, err)
		}
	}
}

func TestRotateInterruptedAtEveryStep(t *testing.T) {
	steps := rotateSteps(t)
	want := "generate reencrypt:alpha reencrypt:beta reencrypt:gamma keep-old commit recipients finalize:alpha finalize:beta finalize:gamma"
	if strings.Join(steps, " ") != want {
		t.Fatalf("rotation steps:\n got %s\nwant %s", strings.Join(steps, " "), want)
	}
	ageBin, _ := exec.LookPath("age")
	for _, failAt := range steps {
		t.Run(strings.ReplaceAll(failAt, ":", "_"), func(t *testing.T) {
			v, backup, orig := rotationFixture(t)
			v.Hook = func(s string) error {
				if s == failAt {
					return errors.New("injected crash")
				}
				return nil
			}
			_, err := v.Rotate(RotateOptions{})
			if err == nil || !strings.Contains(err.Error(), "interrupted at step "+failAt) {
				t.Fatalf("rotate with a crash at %s: %v", failAt, err)
			}
			assertDecryptableOnRecord(t, v, backup, "after crash at "+failAt)
			if ageBin != "" {
				out, err := exec.Command(ageBin, "-d", "-i", v.In.VaultIdentity(), v.In.VaultEntry("alpha")).Output()
				if err != nil || string(out) != rotateValues["alpha"] {
					t.Fatalf("age CLI after crash at %s: %q %v", failAt, out, err)
				}
			}
			if v.Pending() == "" {
				t.Fatalf("no pending rotation reported after a crash at %s", failAt)
			}
			// While pending, set and get keep working and follow the rule.
			v.Hook = nil
			mustSet(t, v, "alpha", rotateValues["alpha"])
			if got := mustGet(t, v, "beta"); got != rotateValues["beta"] {
				t.Fatal(got)
			}
			assertDecryptableOnRecord(t, v, backup, "after a set while pending")
			// Recipients cannot change while a rotation is pending.
			if err := v.RemoveRecipient("age1x"); err == nil || !strings.Contains(err.Error(), "rotation is pending") {
				t.Fatalf("recipients change while pending: %v", err)
			}

			// Re-running finishes.
			res, err := Open(v.In).Rotate(RotateOptions{})
			if err != nil {
				t.Fatalf("re-run after crash at %s: %v", failAt, err)
			}
			if !res.Resumed {
				t.Fatal("re-run did not resume")
			}
			assertRotated(t, v, backup, orig)
		})
	}
}

// assertRotated: the rotation finished: no pending files, a new identity
// that alone decrypts everything, the old one retired and no longer able to
// decrypt, recipients.txt updated.
func assertRotated(t *testing.T, v *Vault, backup string, orig []byte) {
	t.Helper()
	if v.Pending() != "" {
		t.Fatalf("still pending: %s", v.Pending())
	}
	cur, _ := os.ReadFile(v.In.VaultIdentity())
	if string(cur) == string(orig) {
		t.Fatal("identity unchanged")
	}
	assertDecryptableOnRecord(t, v, backup, "after rotation")
	retired, _ := os.ReadDir(v.In.VaultRetired())
	if len(retired) != 1 {
		t.Fatalf("retired identities: %d", len(retired))
	}
	old := filepath.Join(v.In.VaultRetired(), retired[0].Name())
	if b, _ := os.ReadFile(old); string(b) != string(orig) {
		t.Fatal("retired identity is not the original")
	}
	for n := range rotateValues {
		if _, err := decryptWith(t, v, old, n); err == nil {
			t.Fatalf("%s still decrypts with the retired identity", n)
		}
	}
	oldID, _ := parseIdentity(orig)
	newID, _ := parseIdentity(cur)
	rs, err := v.Recipients()
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{}
	for _, r := range rs {
		keys = append(keys, r.Key+"|"+r.Label)
	}
	got := strings.Join(keys, " ")
	if !strings.Contains(got, newID.Recipient().String()+"|"+SelfLabel) || strings.Contains(got, oldID.Recipient().String()) || len(rs) != 2 {
		t.Fatalf("recipients after rotation: %s", got)
	}
}

func TestRotateTwiceAndEmpty(t *testing.T) {
	v := newTestVault(t)
	if _, err := v.Rotate(RotateOptions{}); err != nil { // no entries
		t.Fatal(err)
	}
	mustSet(t, v, "a", "1")
	if _, err := v.Rotate(RotateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, v, "a"); got != "1" {
		t.Fatal(got)
	}
	retired, _ := os.ReadDir(v.In.VaultRetired())
	if len(retired) != 2 {
		t.Fatalf("retired: %d", len(retired))
	}
}

func TestRotateKeepsMtime(t *testing.T) {
	v := newTestVault(t)
	mustSet(t, v, "a", "1")
	old := mustStat(t, v.In.VaultEntry("a")).ModTime().Add(-48 * 3600e9)
	os.Chtimes(v.In.VaultEntry("a"), old, old)
	if _, err := v.Rotate(RotateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := mustStat(t, v.In.VaultEntry("a")).ModTime(); !got.Equal(old) {
		t.Fatalf("mtime %v, want %v", got, old)
	}
}

func mustStat(t *testing.T, p string) os.FileInfo {
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi
}

func TestRotatePassphraseInterrupted(t *testing.T) {
	v := bareVault(t)
	pass := func(string, bool) ([]byte, error) { return []byte("pw"), nil }
	v.Passphrase = pass
	if _, err := v.Init(InitOptions{Passphrase: true}); err != nil {
		t.Fatal(err)
	}
	mustSet(t, v, "a", "secret-a")
	v.Hook = func(s string) error {
		if s == "commit" {
			return errors.New("crash")
		}
		return nil
	}
	if _, err := v.Rotate(RotateOptions{}); err == nil {
		t.Fatal("no crash")
	}
	v2 := Open(v.In)
	v2.Passphrase = pass
	if _, err := v2.Rotate(RotateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{v.In.VaultIdentity()} {
		data, _ := os.ReadFile(p)
		if !isProtected(data) {
			t.Fatalf("%s not protected", p)
		}
	}
	v3 := Open(v.In)
	v3.Passphrase = pass
	if got := mustGet(t, v3, "a"); got != "secret-a" {
		t.Fatal(got)
	}
}

func TestRecipientsAddRemoveInterrupted(t *testing.T) {
	v := newTestVault(t)
	mustSet(t, v, "a", "va")
	mustSet(t, v, "b", "vb")
	extra, _ := age.GenerateX25519Identity()
	extraFile := filepath.Join(t.TempDir(), "extra.txt")
	os.WriteFile(extraFile, formatIdentity(extra, v.now()), 0o600)
	key := extra.Recipient().String()

	// Crash after the first entry: the key is not recorded yet; re-running
	// the add finishes it.
	v.Hook = func(s string) error {
		if s == "rekey:a" {
			return errors.New("crash")
		}
		return nil
	}
	if err := v.AddRecipient(key, "laptop"); err == nil {
		t.Fatal("no crash")
	}
	v.Hook = nil
	if got := mustGet(t, v, "b"); got != "vb" {
		t.Fatal(got)
	}
	if err := v.AddRecipient(key, "laptop"); err != nil {
		t.Fatal(err)
	}
	for n, want := range map[string]string{"a": "va", "b": "vb"} {
		if got, err := decryptWith(t, v, extraFile, n); err != nil || got != want {
			t.Fatalf("%s with the added key: %q %v", n, got, err)
		}
	}
	// New entries are encrypted to it too.
	mustSet(t, v, "c", "vc")
	if got, err := decryptWith(t, v, extraFile, "c"); err != nil || got != "vc" {
		t.Fatalf("new entry with added key: %v", err)
	}
	if err := v.AddRecipient(key, "again"); err == nil || !strings.Contains(err.Error(), "already a recipient") {
		t.Fatalf("duplicate add: %v", err)
	}
	rs, _ := v.Recipients()
	if len(rs) != 2 || rs[1].Key != key || rs[1].Label != "laptop" {
		t.Fatalf("recipients: %+v", rs)
	}
	// Self cannot be removed; unknown keys are reported.
	if err := v.RemoveRecipient(rs[0].Key); err == nil || !strings.Contains(err.Error(), "own identity") {
		t.Fatalf("remove self: %v", err)
	}
	other, _ := age.GenerateX25519Identity()
	if err := v.RemoveRecipient(other.Recipient().String()); err == nil || !strings.Contains(err.Error(), "not a recipient") {
		t.Fatalf("remove unknown: %v", err)
	}
	// Remove, interrupted then finished: the key no longer decrypts anything.
	v.Hook = func(s string) error {
		if s == "rekey:b" {
			return errors.New("crash")
		}
		return nil
	}
	if err := v.RemoveRecipient(key); err == nil {
		t.Fatal("no crash")
	}
	v.Hook = nil
	if err := v.RemoveRecipient(key); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b", "c"} {
		if _, err := decryptWith(t, v, extraFile, n); err == nil {
			t.Fatalf("%s still decrypts with the removed key", n)
		}
		if _, err := decryptWith(t, v, v.In.VaultIdentity(), n); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
	}
	// Bad keys.
	for _, bad := range []string{"", "age1", "AGE-SECRET-KEY-1QQQQ", "ssh-ed25519 AAAA", "AGE1" + strings.ToUpper(key[4:]), key + "x"} {
		if err := v.AddRecipient(bad, ""); err == nil {
			t.Errorf("add %q accepted", bad)
		} else if strings.Contains(err.Error(), "AGE-SECRET-KEY-1QQQQ") {
			t.Errorf("error echoes a secret key: %v", err)
		}
	}
}

// Concurrent writers (sub-agents, host and container) serialise on the vault
// lock: sets racing a rotation all end up readable with the key on record.
func TestConcurrentSetsAndRotate(t *testing.T) {
	v := newTestVault(t)
	mustSet(t, v, "seed", "seed-value")
	var wg sync.WaitGroup
	errc := make(chan error, 20)
	for i := 0; i < 12; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			w := Open(v.In)
			if i%4 == 0 {
				_, err := w.Rotate(RotateOptions{})
				errc <- err
				return
			}
			_, err := w.Set(fmt.Sprintf("e%d", i), []byte(fmt.Sprintf("value-%d", i)))
			errc <- err
		}(i)
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			t.Fatal(err)
		}
	}
	names, _ := v.names()
	if len(names) != 10 {
		t.Fatalf("entries: %v", names)
	}
	for _, n := range names {
		if _, err := decryptWith(t, v, v.In.VaultIdentity(), n); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
	}
	retired, _ := os.ReadDir(v.In.VaultRetired())
	if len(retired) != 3 || v.Pending() != "" {
		t.Fatalf("retired %d, pending %q", len(retired), v.Pending())
	}
}
