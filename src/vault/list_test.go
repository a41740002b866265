package vault

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/policy"
)

func TestReadValue(t *testing.T) {
	for _, c := range []struct {
		in   string
		raw  bool
		want string
	}{
		{"tok\n", false, "tok"},
		{"tok\r\n", false, "tok"},
		{"tok\n\n", false, "tok\n"},
		{"tok", false, "tok"},
		{"tok\n", true, "tok\n"},
		{"", false, ""},
	} {
		got, err := ReadValue(strings.NewReader(c.in), c.raw)
		if err != nil || string(got) != c.want {
			t.Errorf("ReadValue(%q, raw %v) = %q, %v; want %q", c.in, c.raw, got, err, c.want)
		}
	}
	long, err := ReadValue(strings.NewReader(strings.Repeat("x", 2*MaxValueSize)), true)
	if err != nil || len(long) != MaxValueSize+3 {
		t.Errorf("a long value: %d bytes, %v", len(long), err)
	}
	if _, err := ReadValue(iotest.ErrReader(errors.New("boom")), false); errs.Code(err) != errs.Failure {
		t.Errorf("read error: %v", err)
	}
}

func TestWithUses(t *testing.T) {
	es := []Entry{{Name: "github"}, {Name: "unused"}}
	cfg := &config.Config{Env: map[string]string{"GH_TOKEN": "vault:github"}}
	got := WithUses(es, cfg)
	if len(got) != 2 || got[0].Name != "github" || len(got[0].UsedBy) != 1 || got[0].UsedBy[0].Variable != "GH_TOKEN" ||
		got[1].UsedBy == nil || len(got[1].UsedBy) != 0 {
		t.Fatalf("%+v", got)
	}
	got = WithUses(es, nil)
	if len(got) != 2 || got[0].UsedBy == nil || len(got[0].UsedBy) != 0 {
		t.Fatalf("without config: %+v", got)
	}
}

func TestListedRow(t *testing.T) {
	updated := time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)
	cfg := &config.Config{Env: map[string]string{"GH_TOKEN": "vault:github"},
		Secrets: map[string]policy.Binding{"API": {Vault: "github", Hosts: []string{"api.github.com", "uploads.github.com"}}}}
	got := WithUses([]Entry{{Name: "github", Size: 321, Updated: updated}, {Name: "unused", Size: 200, Updated: updated}}, cfg)
	if want := "github\t321\t2026-11-22T09:30:00Z\tAPI → api.github.com,uploads.github.com in header; GH_TOKEN (env)"; got[0].Row() != want {
		t.Errorf("used: %q, want %q", got[0].Row(), want)
	}
	if want := "unused\t200\t2026-11-22T09:30:00Z\t-"; got[1].Row() != want {
		t.Errorf("unused: %q, want %q", got[1].Row(), want)
	}
	if strings.Count(ListColumns, "\t") != strings.Count(got[0].Row(), "\t") {
		t.Errorf("header %q and row %q differ in columns", ListColumns, got[0].Row())
	}
}

func TestRecipientString(t *testing.T) {
	if got := (Recipient{Key: "age1abc"}).String(); got != "age1abc" {
		t.Errorf("no label: %q", got)
	}
	if got := (Recipient{Key: "age1abc", Label: "backup key"}).String(); got != "age1abc  # backup key" {
		t.Errorf("label: %q", got)
	}
}

func TestReadValueFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "pw.txt")
	if err := os.WriteFile(p, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadValueFile(p, false); err != nil || string(got) != "s3cret" {
		t.Errorf("trimmed: %q %v", got, err)
	}
	if got, err := ReadValueFile(p, true); err != nil || string(got) != "s3cret\n" {
		t.Errorf("raw: %q %v", got, err)
	}
	if _, err := ReadValueFile(p+".missing", false); errs.Code(err) != errs.Usage || !strings.Contains(err.Error(), "read value") {
		t.Errorf("missing file: %v", err)
	}
}
