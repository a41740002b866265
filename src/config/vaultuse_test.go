package config

import (
	"reflect"
	"strings"
	"testing"

	"github.com/hobbs-agent/hobbs/src/policy"
)

func TestUsesAndDangling(t *testing.T) {
	c := &Config{
		Env: map[string]string{"GH_TOKEN": "vault:github", "OTHER": "vault:other", "PLAIN": "github"},
		Secrets: map[string]policy.Binding{"GITHUB_TOKEN": {Vault: "github", Hosts: []string{"api.github.com", "github.com"}},
			"OAUTH": {Vault: "oauth", Hosts: []string{"auth.example"}, In: []string{"body", "header"}, Requests: []string{"POST /token"}}},
	}
	uses := c.Uses("github")
	want := []Use{{Variable: "GITHUB_TOKEN", How: "bound", Hosts: []string{"api.github.com", "github.com"}, In: []string{"header"}}, {Variable: "GH_TOKEN", How: "env"}}
	if !reflect.DeepEqual(uses, want) {
		t.Fatalf("uses %+v", uses)
	}
	if uses[0].String() != "GITHUB_TOKEN → api.github.com,github.com in header" || uses[1].String() != "GH_TOKEN (env)" {
		t.Errorf("strings %q %q", uses[0], uses[1])
	}
	if got := c.Uses("oauth")[0].String(); got != "OAUTH → auth.example in header, body (POST /token)" {
		t.Errorf("oauth: %q", got)
	}
	if got := c.Uses("none"); got == nil || len(got) != 0 {
		t.Errorf("no uses: %#v", got)
	}
	removed := c.Dangling("github", "")
	if len(removed) != 2 || !strings.Contains(removed[0], "config.yaml maps GH_TOKEN to vault:github") ||
		!strings.HasSuffix(removed[0], "store it again (hobbs vault set github) or change env.GH_TOKEN in config.yaml") ||
		!strings.HasSuffix(removed[1], "or change secrets.GITHUB_TOKEN.vault in config.yaml") {
		t.Errorf("removed: %q", removed)
	}
	renamed := c.Dangling("github", "gh")
	if len(renamed) != 2 || !strings.HasSuffix(renamed[0], "set env.GH_TOKEN to vault:gh in config.yaml") ||
		!strings.HasSuffix(renamed[1], "set secrets.GITHUB_TOKEN.vault to gh in config.yaml") {
		t.Errorf("renamed: %q", renamed)
	}
	if got := c.Dangling("unused", ""); len(got) != 0 {
		t.Errorf("unused: %q", got)
	}
}
