package vault

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	"filippo.io/age/armor"

	"github.com/hobbs-agent/hobbs/src/instance"
)

// Entry names come from argv, config.yaml and the agent: whatever is
// accepted must map to exactly one file directly inside vault/data.
func FuzzValidName(f *testing.F) {
	for _, s := range []string{"github-token", "../x", "a/b", ".hidden", "a\x00b", "ｇ", "a..b", strings.Repeat("a", 65)} {
		f.Add(s)
	}
	in := instance.Instance{Root: "/inst"}
	f.Fuzz(func(t *testing.T, name string) {
		if !ValidName(name) {
			if CheckName(name) == nil {
				t.Fatal("CheckName accepts what ValidName refuses")
			}
			return
		}
		p := in.VaultEntry(name)
		if filepath.Dir(p) != in.VaultData() || filepath.Base(p) != name+".age" || filepath.Clean(p) != p {
			t.Fatalf("name %q maps to %s", name, p)
		}
		if strings.HasPrefix(name, ".") || strings.ContainsAny(name, "/\\\x00") || len(name) > MaxNameLen {
			t.Fatalf("accepted %q", name)
		}
		for _, r := range name {
			if r > 0x7f {
				t.Fatalf("accepted non-ASCII %q", name)
			}
		}
	})
}

// recipients.txt is user-edited text: parsing never panics, errors never
// quote a line (it may be a pasted secret key), and what parses survives a
// format/parse round trip.
func FuzzParseRecipients(f *testing.F) {
	id, _ := age.GenerateX25519Identity()
	k := id.Recipient().String()
	f.Add([]byte(FormatRecipients([]Recipient{{Key: k, Label: "vault identity"}})))
	f.Add([]byte("# label\n" + k + "\n\n" + k + "\n"))
	f.Add([]byte(id.String() + "\n"))
	f.Add([]byte("age1pq1xyz\n"))
	f.Add([]byte("#\x00\n" + k + "\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, err := ParseRecipients(data)
		if err != nil {
			if strings.Contains(err.Error(), "AGE-SECRET-KEY") {
				t.Fatalf("error quotes a secret key: %v", err)
			}
			return
		}
		again, err := ParseRecipients(FormatRecipients(rs))
		if err != nil {
			t.Fatalf("formatted recipients do not parse: %v", err)
		}
		if len(again) != len(rs) {
			t.Fatalf("round trip: %d → %d", len(rs), len(again))
		}
		for i := range rs {
			if again[i] != (Recipient{Key: rs[i].Key, Label: cleanLabel(rs[i].Label)}) {
				t.Fatalf("round trip: %+v → %+v", rs[i], again[i])
			}
			if _, err := age.ParseX25519Recipient(rs[i].Key); err != nil {
				t.Fatalf("accepted bad key %q", rs[i].Key)
			}
		}
	})
}

// Identity files may be damaged or edited: parsing never panics and errors
// never quote the file.
func FuzzParseIdentity(f *testing.F) {
	id, _ := age.GenerateX25519Identity()
	f.Add(formatIdentity(id, time.Unix(0, 0)))
	f.Add([]byte("AGE-SECRET-KEY-1\n"))
	f.Add([]byte(id.String() + "\n" + id.String() + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := parseIdentity(data)
		if err != nil {
			if strings.Contains(err.Error(), "AGE-SECRET-KEY-1") && len(err.Error()) > 60 {
				t.Fatalf("error may quote key material: %v", err)
			}
			return
		}
		if got == nil {
			t.Fatal("nil identity without error")
		}
	})
}

// Entry files are writable from the agent container: decrypting arbitrary
// bytes never panics, always fails cleanly, and the error never quotes them.
func FuzzDecryptEntry(f *testing.F) {
	id, _ := age.GenerateX25519Identity()
	good, _ := encrypt([]byte("value"), []string{id.Recipient().String()})
	f.Add(good)
	var arm bytes.Buffer
	aw := armor.NewWriter(&arm)
	aw.Write(good)
	aw.Close()
	f.Add(arm.Bytes())
	f.Add([]byte("age-encryption.org/v1\n-> X25519 AAAA\nLEAKME\n--- AAAA\n"))
	f.Add([]byte("LEAKME plaintext"))
	f.Fuzz(func(t *testing.T, data []byte) {
		val, err := decrypt("x", "vault/data/x.age", data, []age.Identity{id})
		if err != nil {
			if strings.Contains(err.Error(), "LEAKME") {
				t.Fatalf("error quotes the file: %v", err)
			}
			return
		}
		if len(val) > MaxValueSize {
			t.Fatal("oversized value accepted")
		}
		t2 := bytes.TrimLeft(data, " \t\r\n")
		if !bytes.HasPrefix(data, []byte("age-encryption.org/v1\n")) && !bytes.HasPrefix(t2, []byte(armor.Header)) {
			t.Fatal("decrypted something that is not an age file")
		}
	})
}
