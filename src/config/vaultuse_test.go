package config

import (
	"reflect"
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
	if want := []DanglingUse{{"GH_TOKEN", "env.GH_TOKEN", ""}, {"GITHUB_TOKEN", "secrets.GITHUB_TOKEN.vault", ""}}; !reflect.DeepEqual(removed, want) {
		t.Errorf("removed: %+v", removed)
	}
	renamed := c.Dangling("github", "gh")
	if want := []DanglingUse{{"GH_TOKEN", "env.GH_TOKEN", "vault:gh"}, {"GITHUB_TOKEN", "secrets.GITHUB_TOKEN.vault", "gh"}}; !reflect.DeepEqual(renamed, want) {
		t.Errorf("renamed: %+v", renamed)
	}
	if got := c.Dangling("unused", ""); len(got) != 0 {
		t.Errorf("unused: %q", got)
	}
}
