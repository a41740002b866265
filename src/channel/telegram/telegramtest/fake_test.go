package telegramtest

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// call makes one Bot API call with url-encoded parameters and decodes the
// answer.
func call(t *testing.T, f *Fake, token, method string, p url.Values) (int, map[string]any) {
	t.Helper()
	resp, err := http.PostForm(f.URL+"/bot"+token+"/"+method, p)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return resp.StatusCode, m
}

func TestFakeFollowsTheBotAPI(t *testing.T) {
	f := NewFake(t, "")
	if code, m := call(t, f, "1:wrong", "getMe", nil); code != 401 || m["ok"] != false {
		t.Errorf("wrong token: %d %v", code, m)
	}
	id := f.Send(42, "hello")
	f.Send(42, "again")
	_, m := call(t, f, Token, "getUpdates", url.Values{"offset": {"0"}, "timeout": {"0"}})
	if n := len(m["result"].([]any)); n != 2 {
		t.Errorf("%d updates", n)
	}
	// An offset above an update confirms it: it is not returned again.
	_, m = call(t, f, Token, "getUpdates", url.Values{"offset": {itoa(id + 1)}})
	if n := len(m["result"].([]any)); n != 1 || f.Confirmed() != id+1 {
		t.Errorf("%d updates after confirming one, confirmed %d", n, f.Confirmed())
	}
	if code, m := call(t, f, Token, "sendMessage", url.Values{"chat_id": {"42"}, "text": {strings.Repeat("é", 4097)}}); code != 400 || !strings.Contains(m["description"].(string), "too long") {
		t.Errorf("4097 characters: %d %v", code, m)
	}
	kb := `{"inline_keyboard":[[{"text":"x","callback_data":"` + strings.Repeat("a", 65) + `"}]]}`
	if code, _ := call(t, f, Token, "sendMessage", url.Values{"chat_id": {"42"}, "text": {"x"}, "reply_markup": {kb}}); code != 400 {
		t.Errorf("65-byte callback_data accepted: %d", code)
	}
	if code, _ := call(t, f, Token, "sendMessage", url.Values{"chat_id": {"7"}, "text": {"x"}}); code != 400 {
		t.Errorf("a chat that never wrote: %d", code)
	}
	code, m := call(t, f, Token, "sendMessage", url.Values{"chat_id": {"42"}, "text": {"hi"}})
	if code != 200 {
		t.Fatalf("sendMessage: %d %v", code, m)
	}
	msgID := itoa(int64(m["result"].(map[string]any)["message_id"].(float64)))
	if code, _ := call(t, f, Token, "editMessageText", url.Values{"chat_id": {"42"}, "message_id": {msgID}, "text": {"hi"}}); code != 400 {
		t.Errorf("an edit that changes nothing: %d", code)
	}
	q := f.Press(42, 42, 0, "data")
	if code, _ := call(t, f, Token, "answerCallbackQuery", url.Values{"callback_query_id": {q}}); code != 200 {
		t.Errorf("answer: %d", code)
	}
	if code, _ := call(t, f, Token, "answerCallbackQuery", url.Values{"callback_query_id": {q}}); code != 400 {
		t.Errorf("second answer: %d", code)
	}
	f.Fail("getMe", 1, 429, 5)
	if code, m := call(t, f, Token, "getMe", nil); code != 429 || m["parameters"].(map[string]any)["retry_after"] != 5.0 {
		t.Errorf("429: %d %v", code, m)
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }
