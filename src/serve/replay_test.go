package serve

import (
	"net/http"
	"testing"
	"time"
)

// The attack: GitHub signs the body, not X-GitHub-Delivery. A captured
// delivery sent again under a new id, or with none, is the same event and
// must not run again within the replay window; a different body under the
// first id is refused as well (the id was seen). After the window the body
// is taken again: that much of a replay is not prevented.
func TestReplayUnderAnotherID(t *testing.T) {
	f := newFixture(t, "")
	s := f.service()
	body := issue(1, "alice")
	if code, _ := send(s, github(body, "issues", "d-1", secret)); code != http.StatusAccepted {
		t.Fatalf("first: %d", code)
	}
	for _, id := range []string{"d-2", "", "not a valid id!"} {
		if code, rep := send(s, github(body, "issues", id, secret)); code != http.StatusConflict || rep.Status != "refused" {
			t.Fatalf("the same body under id %q: %d %+v", id, code, rep)
		}
	}
	if code, _ := send(f.service(), github(body, "issues", "d-3", secret)); code != http.StatusConflict {
		t.Fatalf("the same body under a new id after a restart: %d", code)
	}
	if code, _ := send(s, github(issue(2, "alice"), "issues", "d-1", secret)); code != http.StatusConflict {
		t.Fatalf("another body under a seen id: %d", code)
	}
	if n := len(f.jobs()); n != 1 {
		t.Fatalf("%d jobs, want 1", n)
	}
	f.advance(ReplayWindow + time.Second)
	if code, _ := send(s, github(body, "issues", "d-4", secret)); code != http.StatusAccepted {
		t.Fatalf("after the window: %d", code)
	}
}

// A delivery refused after its signature held forgets both its keys: the
// same event may be sent again once the refusal's cause is fixed, under
// its id or another.
func TestRefusedDeliveryForgetsItsBody(t *testing.T) {
	f := newFixture(t, "")
	s := f.service()
	body := []byte(`{"action":"opened","issue":`) // signed, but not JSON
	if code, _ := send(s, github(body, "issues", "d-1", secret)); code != http.StatusBadRequest {
		t.Fatalf("unparsable body: %d", code)
	}
	if code, _ := send(s, github(body, "issues", "d-2", secret)); code != http.StatusBadRequest {
		t.Fatalf("the unparsable body again, under another id: %d, want 400 (not a replay)", code)
	}
}

// ReplayKeys: the id and the body's digest; once when there is no id.
func TestReplayKeys(t *testing.T) {
	h := http.Header{}
	h.Set("X-GitHub-Delivery", "abc-1")
	if k := ReplayKeys("github", h, []byte("{}")); len(k) != 2 || k[0] != "abc-1" || k[1] != "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a" {
		t.Fatalf("ReplayKeys = %q", k)
	}
	if k := ReplayKeys("github", http.Header{}, []byte("{}")); len(k) != 1 || k[0] != "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a" {
		t.Fatalf("ReplayKeys without an id = %q", k)
	}
}
