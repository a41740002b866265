package config

import (
	"strings"
	"testing"
	"time"
)

// A trigger, serve: and channels: as docs/serve.md shows them decode; the
// defaults hold where they are left out.
func TestServeConfig(t *testing.T) {
	doc := `serve:
  max_runs: 3
triggers:
  new-issues:
    source: github
    secret: webhook-github
    playbook: triage-issue
    events: [issues]
    debounce: 10s
  pushes:
    source: gitlab
    secret: webhook-gitlab
    playbook: triage-issue
    events: [Push Hook]
    ignore_bots: false
channels:
  telegram:
    token: telegram-bot
`
	c, err := Parse("c.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if c.Serve.Listen != DefaultServeListen || c.Serve.MaxRuns != 3 {
		t.Errorf("serve: %+v", c.Serve)
	}
	ni := c.Triggers["new-issues"]
	if ni.DebounceDuration() != 10*time.Second || !ni.DropsBots() || ni.Events[0] != "issues" {
		t.Errorf("new-issues: %+v", ni)
	}
	if p := c.Triggers["pushes"]; p.DropsBots() || p.DebounceDuration() != 0 {
		t.Errorf("pushes: %+v", p)
	}
	if tg := c.Channels.Telegram; !tg.Enabled() || tg.APIURL != DefaultTelegramAPI {
		t.Errorf("telegram: %+v", tg)
	}
	if got := strings.Join(c.TriggerNames(), ","); got != "new-issues,pushes" {
		t.Errorf("names %s", got)
	}
}

func TestServeConfigErrors(t *testing.T) {
	trig := func(body string) string {
		return "triggers:\n  t1:\n    source: github\n    secret: s\n    playbook: p\n" + body
	}
	cases := []struct{ name, doc, want string }{
		{"listen", "serve:\n  listen: nowhere\n", `c.yaml:2: serve.listen: "nowhere" is not HOST:PORT`},
		{"listen port", "serve:\n  listen: 127.0.0.1:99999\n", `c.yaml:2: serve.listen: "127.0.0.1:99999": the port`},
		{"listen no host", "serve:\n  listen: \":8421\"\n", `c.yaml:2: serve.listen: ":8421" listens on every address`},
		{"max runs", "serve:\n  max_runs: 0\n", `c.yaml:2: serve.max_runs: must be 1 to 64`},
		{"unknown serve key", "serve:\n  lisen: x\n", `c.yaml:2: unknown key "lisen" (did you mean listen?)`},
		{"unknown trigger key", trig("    events: [issues]\n    secrte: x\n"), `c.yaml:7: unknown key "secrte"`},
		{"source", "triggers:\n  t1:\n    source: bitbucket\n    secret: s\n    playbook: p\n    events: [x]\n", `c.yaml:3: triggers.t1.source: "bitbucket" is not a source`},
		{"name", "triggers:\n  T_1:\n    source: github\n", `c.yaml:2: triggers.T_1: a trigger's name`},
		{"secret", "triggers:\n  t1:\n    source: github\n    secret: \"Not A Name\"\n", `c.yaml:4: triggers.t1.secret: "Not A Name" is not a vault entry name`},
		{"playbook", "triggers:\n  t1:\n    source: github\n    secret: s\n    playbook: ../x\n", `c.yaml:5: triggers.t1.playbook: "../x" is not a playbook name`},
		{"no events", trig(""), `c.yaml:2: triggers.t1.events: name the events`},
		{"debounce", trig("    events: [issues]\n    debounce: soon\n"), `c.yaml:7: triggers.t1.debounce: "soon" is not a duration`},
		{"debounce too long", trig("    events: [issues]\n    debounce: 2h\n"), `triggers.t1.debounce: "2h"`},
		{"ignore bots type", trig("    events: [issues]\n    ignore_bots: maybe\n"), `c.yaml:7: wrong type`},
		{"telegram url", "channels:\n  telegram:\n    api_url: ftp://x\n", `c.yaml:3: channels.telegram.api_url: "ftp://x"`},
		{"telegram token value", "channels:\n  telegram:\n    token: \"123456:ABC-DEF\"\n", `c.yaml:3: channels.telegram.token: "123456:ABC-DEF" is not a vault entry name`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(c.doc))
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q lacks %q", err, c.want)
			}
		})
	}
}
