package vault

import (
	"errors"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/errs"
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
