package plan

import (
	"testing"

	"github.com/hobbs-agent/hobbs/src/provenance"
)

// A chat turn's provenance origin is chat, named by its conversation.
func TestChatOrigin(t *testing.T) {
	p, err := New(nil, RunSpec{Kind: KindChat, Name: "c", Image: "i", Host: goldenHost(), Chat: &ChatSpec{Conversation: "telegram-4242"}})
	if err != nil {
		t.Fatal(err)
	}
	if o := p.Origin(); o.Kind != provenance.OriginChat || o.Name != "telegram-4242" {
		t.Errorf("origin %+v", o)
	}
	// A chat spec on another kind, or a chat turn without one, is refused.
	if _, err := New(nil, RunSpec{Kind: KindSession, Name: "c", Image: "i", Host: goldenHost(), Chat: &ChatSpec{}}); err == nil {
		t.Errorf("a session with a chat spec was planned")
	}
	if _, err := New(nil, RunSpec{Kind: KindChat, Name: "c", Image: "i", Host: goldenHost()}); err == nil {
		t.Errorf("a chat turn without its spec was planned")
	}
}
