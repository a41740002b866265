package main

import (
	"bufio"
	"bytes"
	"os"
	"strings"
	"testing"

	"filippo.io/age/armor"

	"github.com/hobbs-agent/hobbs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/vault"
)

// hobbs protects an identity with age's default scrypt cost. This test
// process, like a hobbs binary, never lowers it: only the hobbs the
// scenarios execute does (TestMain).
func TestPassphraseIdentityCost(t *testing.T) {
	t.Parallel()
	if vault.ScryptWorkFactor != 18 {
		t.Fatalf("vault.ScryptWorkFactor = %d, want age's default 18", vault.ScryptWorkFactor)
	}
	in, err := instance.At(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := instance.Init(in, instance.InitOptions{Templates: hobbs.Templates}); err != nil {
		t.Fatal(err)
	}
	v := vault.Open(in)
	v.Passphrase = func(string, bool) ([]byte, error) { return []byte("correct horse"), nil }
	if _, err := v.Init(vault.InitOptions{Passphrase: true}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(in.VaultIdentity())
	if err != nil {
		t.Fatal(err)
	}
	// The age header of the armored file: "-> scrypt SALT LOG2N".
	sc := bufio.NewScanner(armor.NewReader(bytes.NewReader(bytes.TrimSpace(data))))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 4 && f[0] == "->" && f[1] == "scrypt" {
			if f[3] != "18" {
				t.Fatalf("identity protected with scrypt work factor %s, want 18", f[3])
			}
			return
		}
	}
	t.Fatalf("no scrypt stanza in the identity file (%v):\n%s", sc.Err(), data)
}
