package runner

import (
	"strconv"
	"strings"
	"testing"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/launcher"
	"github.com/hobbs-agent/hobbs/src/plan"
	"github.com/hobbs-agent/hobbs/src/policy"
)

// What a chat turn came to: the reply on a successful result, else an
// error saying why; the reply and the error pass through the mask.
func TestChatReply(t *testing.T) {
	p, err := plan.New(nil, plan.RunSpec{Kind: plan.KindChat, Name: "c", Image: "i",
		Host: plan.Host{Instance: "/home/ada/.local/share/hobbs", UID: 1000, GID: 1000, Workspace: "/home/ada/w"}, Chat: &plan.ChatSpec{Conversation: "c1"}})
	if err != nil {
		t.Fatal(err)
	}
	const value = "sekrit-0123456789abcdef"
	mask := policy.NameMask(map[string]string{"ANTHROPIC_API_KEY": value, "GITHUB_TOKEN": "ghp-value-0123456789"})
	result := func(subtype string, isErr bool, text string) string {
		return `{"type":"result","subtype":"` + subtype + `","is_error":` + strconv.FormatBool(isErr) +
			`,"num_turns":3,"total_cost_usd":0.02,"result":` + jsonString(text) + `,"session_id":"s"}`
	}
	words := func(a errs.Advice) string { return "start " + a.Facts["bin"] }
	cases := []struct {
		name    string
		code    int
		runErr  error
		stdout  string
		reply   string
		wantErr string
	}{
		{"ok", 0, nil, "noise\n" + result("success", false, "hi there, the key is "+value), "hi there, the key is [secret ANTHROPIC_API_KEY]", ""},
		{"base64 of a value", 0, nil, result("success", false, "c2Vrcml0LTAxMjM0NTY3ODlhYmNkZWY="), "", ""},
		{"max turns", 1, nil, `{"type":"result","subtype":"error_max_turns","is_error":true,"errors":["x"]}`, "", "limit of 25 turns"},
		{"error subtype", 1, nil, `{"type":"result","subtype":"error_during_execution","is_error":true,"errors":["boom ` + value + `"]}`, "",
			"error_during_execution: boom [secret ANTHROPIC_API_KEY]"},
		{"is_error on success", 0, nil, result("success", true, "Not logged in"), "", "success: Not logged in"},
		{"empty", 0, nil, result("success", false, "  \n"), "", "empty reply"},
		{"no result", 2, nil, "claude: command not found", "", "no result from Claude Code (exit 2)"},
		{"time limit", errs.Timeout, &errs.Error{Code: errs.Timeout, Msg: "stopped"}, "", "", "time limit (10m0s)"},
		{"stopped", launcher.ExitStopped, &errs.Error{Code: launcher.ExitStopped, Msg: "stopped"}, "", "", "was stopped"},
		{"launcher error", 0, errs.Failf("engine down").Advise("engine.unreachable", "bin", "docker"), "", "", "could not run: engine down (start docker)"},
		{"words holding a value", 0, errs.Failf("engine down").Advise("engine.unreachable", "bin", value), "", "",
			"could not run: engine down (start [secret ANTHROPIC_API_KEY])"},
		{"no advice", 0, errs.Failf("engine down"), "", "", "could not run: engine down"},
	}
	for _, c := range cases {
		res, err := chatReply(p, c.code, c.runErr, []byte(c.stdout), mask, words)
		switch {
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr) || res.Reply != ""):
			t.Errorf("%s: %q, %v; want an error with %q", c.name, res.Reply, err, c.wantErr)
		case c.wantErr == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.name == "base64 of a value" && strings.Contains(res.Reply, "c2Vrcml0LTAxMjM0NTY3ODlhYmNkZWY"):
			t.Errorf("%s: the base64 form is not masked: %q", c.name, res.Reply)
		case c.reply != "" && res.Reply != c.reply:
			t.Errorf("%s: reply %q, want %q", c.name, res.Reply, c.reply)
		}
		if c.name == "no advice" && err != nil && strings.Contains(err.Error(), "(") {
			t.Errorf("%s: words without advice: %v", c.name, err)
		}
		if err != nil && strings.Contains(err.Error(), value) {
			t.Errorf("%s: the error holds a value: %v", c.name, err)
		}
	}
}

func jsonString(s string) string {
	b := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
	return `"` + b + `"`
}
