package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// chatRun is what the FAKE claude's print mode does in a chat turn (the
// workspace's .fake-claude-run): report its prompt, arguments, what was
// piped in and what its fresh Claude state holds on stderr; call the bound
// host with the bound secret's placeholder (the upstream echoes the key it
// got); leave a mark in its Claude state; and reply (stdout, the result's
// text) with the owner's message, the number of earlier turns it was
// given, the upstream's answer and the env: secret's value, which the
// reply path must mask.
const chatRun = `{
echo "prompt=$FAKE_PROMPT"
echo "args=$(echo "$FAKE_ARGS" | tr '\n' ' ')"
echo "stdin=$(tr '\n' ' ' < "$FAKE_STDIN")"
echo "state=$(ls -A "$CLAUDE_CONFIG_DIR" | tr '\n' ' ')"
echo "hostname=$(hostname)"
} >&2
touch "$CLAUDE_CONFIG_DIR/mark-$$"
msg=$(sed -n 's/.*"message":"\(.*\)"}$/\1/p' "$FAKE_STDIN")
prior=$(grep -o '"owner":' "$FAKE_STDIN" | wc -l | tr -d ' ')
echo "re: $msg"
echo "prior=$prior"
echo "bound=$(netprobe req GET http://$BOUND/echo "X-Key: $CHAT_KEY")"
echo "env=$OTHER_KEY"
`

const (
	chatBound = "chat-bound-E2E-value-0123456789abcdef"
	chatEnv   = "chat-env-E2E-value-9876543210fedcba"
)

// chatTurn runs one turn of conversation with hobbs chat, as the test user.
func (e *env) chatTurn(t *testing.T, conversation, text string) result {
	t.Helper()
	r := e.hobbs(nil, "chat", "--conversation", conversation, text)
	t.Logf("chat turn %q: exit %d\n--- reply\n%s\n--- stderr\n%s", text, r.code, r.stdout, r.stderr)
	return r
}

// TestChatTurn: two turns of one conversation on the real engine (hobbs
// chat: chat.Turns.Turn, as hobbs serve's Host.Chat calls it), with the
// FAKE claude. Each runs in a fresh container with Claude Code state of its
// own (the first turn's mark is gone in the second) and the interactive
// session's secrets: the bound one works through the proxy, which masks
// its value in what comes back; the env: one is in the agent's
// environment, and the reply path masks it. The owner's text reaches
// Claude Code on standard input, never its command line; the reply comes
// back; the second turn is given the first's exchange. A turn whose Claude
// Code gives no result is an error, and is not kept.
func TestChatTurn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.removeVolume(t)
	for name, v := range map[string]string{"chat-key": chatBound, "other-key": chatEnv} {
		if r := e.hobbs(nil, "vault", "init"); r.code != 0 && !strings.Contains(r.stderr, "exists") {
			t.Fatalf("vault init: %s", r.stderr)
		}
		if r := e.hobbs([]byte(v), "vault", "set", name); r.code != 0 {
			t.Fatalf("vault set: %s", r.stderr)
		}
	}
	gw := bridgeGateway(t)
	var mu sync.Mutex
	var got []string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("X-Key"))
		mu.Unlock()
		fmt.Fprintf(w, "upstream-ok key=%s", r.Header.Get("X-Key"))
	}))
	srv.Listener = listen4(t)
	srv.Start()
	defer srv.Close()
	bound := fmt.Sprintf("%s:%d", gw, srv.Listener.Addr().(*net.TCPAddr).Port)
	writeFile(t, filepath.Join(e.inst, "policy.yaml"), fmt.Sprintf("domains: [%q]\nallow_private: [%s/32]\n", bound, gw))
	writeFile(t, filepath.Join(e.inst, "config.yaml"), fmt.Sprintf(
		"image: %s\nbase_image: %s\nworkspace: %s\nsecrets:\n  CHAT_KEY:\n    vault: chat-key\n    hosts: [%q]\nenv:\n  OTHER_KEY: vault:other-key\n",
		image, baseImage, e.ws, bound))
	writeFile(t, filepath.Join(e.ws, ".fake-claude-run"), "BOUND="+bound+"\n"+chatRun)

	first := `hello "hobbs"`
	r := e.chatTurn(t, "telegram-4242", first)
	if r.code != 0 {
		t.Fatalf("turn 1: exit %d", r.code)
	}
	p := kv(r.stderr)
	if !strings.Contains(r.stdout, `re: hello \"hobbs\"`) || !strings.Contains(r.stdout, "prior=0") {
		t.Errorf("turn 1's reply: %q", r.stdout)
	}
	// Claude Code in print mode with the fixed prompt, the chat flags, and
	// the owner's text on standard input only.
	if !strings.HasPrefix(p["prompt"], "Chat turn: ") || strings.Contains(p["args"], "hello") {
		t.Errorf("prompt %q, args %q: the owner's text must be on stdin only", p["prompt"], p["args"])
	}
	for _, w := range []string{"--permission-mode dontAsk", "--output-format json", "--no-session-persistence",
		"--setting-sources user", "--strict-mcp-config", "--max-turns 25", "--disallowedTools mcp__*"} {
		if !strings.Contains(p["args"], w) {
			t.Errorf("claude's arguments %q lack %q", p["args"], w)
		}
	}
	var in1 struct {
		Conversation string            `json:"conversation"`
		Turns        []json.RawMessage `json:"turns"`
		Message      string            `json:"message"`
	}
	if err := json.Unmarshal([]byte(p["stdin"]), &in1); err != nil || in1.Message != first || len(in1.Turns) != 0 || in1.Conversation != "telegram-4242" {
		t.Errorf("turn 1's stdin %q: %+v %v", p["stdin"], in1, err)
	}
	// The session's bound secret worked through the proxy, whose masking
	// kept its value out of what came back; the env: value the agent
	// printed is masked on the way out.
	if !strings.Contains(r.stdout, "bound=status=200 body=upstream-ok key=") {
		t.Errorf("the bound host: %q", r.stdout)
	}
	mu.Lock()
	if len(got) != 1 || got[0] != chatBound {
		t.Errorf("the upstream got keys %q, want the bound value once", got)
	}
	mu.Unlock()
	if !strings.Contains(r.stdout, "env=[secret OTHER_KEY]") {
		t.Errorf("the env: secret in the reply is not masked: %q", r.stdout)
	}
	for _, v := range []string{chatBound, chatEnv} {
		if strings.Contains(r.stdout, v) {
			t.Errorf("the reply holds a secret value: %q", r.stdout)
		}
	}
	// A fresh Claude state: nothing but the seeded sign-in (none here).
	if strings.Contains(p["state"], "mark-") {
		t.Errorf("turn 1's Claude state is not fresh: %q", p["state"])
	}

	r2 := e.chatTurn(t, "telegram-4242", "and again")
	if r2.code != 0 {
		t.Fatalf("turn 2: exit %d", r2.code)
	}
	p2 := kv(r2.stderr)
	if !strings.Contains(r2.stdout, "re: and again") || !strings.Contains(r2.stdout, "prior=1") {
		t.Errorf("turn 2's reply: %q", r2.stdout)
	}
	var in2 struct {
		Turns []struct{ Owner, Hobbs string } `json:"turns"`
	}
	// The reply as kept, without the note that the turn tainted the
	// conversation (it read the bound host, which is not trusted).
	if err := json.Unmarshal([]byte(p2["stdin"]), &in2); err != nil || len(in2.Turns) != 1 || in2.Turns[0].Owner != first ||
		!strings.HasPrefix(r.stdout, strings.TrimSpace(in2.Turns[0].Hobbs)) || strings.Contains(in2.Turns[0].Hobbs, "/trust") {
		t.Errorf("turn 2 was not given turn 1's exchange: %q (%v)", p2["stdin"], err)
	}
	if strings.Contains(p2["state"], "mark-") {
		t.Errorf("turn 2 sees turn 1's Claude state: %q", p2["state"])
	}
	// Another conversation starts empty.
	if r3 := e.chatTurn(t, "other", "hi"); r3.code != 0 || !strings.Contains(r3.stdout, "prior=0") {
		t.Errorf("another conversation: exit %d %q", r3.code, r3.stdout)
	}

	// A turn whose Claude Code fails: an error that says why, not kept.
	writeFile(t, filepath.Join(e.ws, ".fake-claude-run"), "echo '@turns 99'\necho never\n")
	r4 := e.chatTurn(t, "telegram-4242", "too long")
	if r4.code != 1 || !strings.Contains(r4.stderr, "limit of 25 turns") {
		t.Errorf("a failed turn: exit %d %q", r4.code, r4.stderr)
	}
	data, err := os.ReadFile(filepath.Join(e.inst, "chat", "telegram-4242.json"))
	if err != nil || strings.Count(string(data), `"owner"`) != 2 || strings.Contains(string(data), "too long") ||
		strings.Contains(string(data), chatEnv) {
		t.Errorf("the kept conversation: %v\n%s", err, data)
	}
	// Audited, with no text; nothing left behind.
	audit, _ := os.ReadFile(filepath.Join(e.inst, "logs", "audit.log"))
	if n := strings.Count(string(audit), `"chat.turn"`); n != 4 || strings.Contains(string(audit), "hello") || !strings.Contains(string(audit), `"kind":"chat"`) {
		t.Errorf("audit: %d chat.turn lines\n%s", n, audit)
	}
	// Provenance: each turn's origin is the owner's chat; a turn is tainted
	// by what it read (the bound host is not trusted), and the last, which
	// read nothing, by its conversation, which holds tainted turns.
	var origins, outcomes []string
	for _, l := range strings.Split(string(audit), "\n") {
		var a struct {
			Event, Outcome string
			Detail         struct{ Origin string }
		}
		if json.Unmarshal([]byte(l), &a) == nil && a.Event == "provenance.session" {
			origins, outcomes = append(origins, a.Detail.Origin), append(outcomes, a.Outcome)
		}
	}
	if len(origins) != 4 || origins[0] != "chat telegram-4242" || origins[2] != "chat other" ||
		strings.Join(outcomes, " ") != "tainted tainted tainted tainted" {
		t.Errorf("provenance: origins %q, outcomes %q", origins, outcomes)
	}
	if l := e.leftovers(t); len(l) > 0 {
		t.Errorf("left behind: %v", l)
	}
}
