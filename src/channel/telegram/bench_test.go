package telegram

import (
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/channel/telegram/telegramtest"
)

// BenchmarkChatTurnStart measures, against the fake server on loopback,
// from an owner's message reaching the Bot API server to Host.Chat being
// called: the long poll's return, the update's handling (its inbox file and
// the stored offset, each fsynced) and the chat worker's start.
func BenchmarkChatTurnStart(b *testing.B) {
	e := newEnv(b)
	started := make(chan struct{}, 1)
	e.host.chat = func(conv, text string) string {
		started <- struct{}{}
		return "ok"
	}
	e.start()
	e.pair()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.fake.Send(owner, "hello")
		<-started
		b.StopTimer() // the reply is sent before the next message
		e.fake.Wait(b, 10*time.Second, "reply", func(v telegramtest.View) bool { return len(v.Sent(owner)) >= i+2 })
		b.StartTimer()
	}
	b.StopTimer()
	e.stop()
}

// BenchmarkInstinctRoundTrip measures /status from the owner's message to
// the reply reaching the fake server: handling, the durable outbox, the
// send.
func BenchmarkInstinctRoundTrip(b *testing.B) {
	e := newEnv(b)
	e.start()
	e.pair()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.fake.Send(owner, "/status")
		e.fake.Wait(b, 10*time.Second, "reply", func(v telegramtest.View) bool { return len(v.Sent(owner)) >= i+2 })
	}
	b.StopTimer()
	e.stop()
}
