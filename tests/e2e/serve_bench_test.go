package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/channel/telegram/telegramtest"
)

// BenchmarkServe (make bench, tests/bench/serve.sh; not in CI): the time
// from a signed webhook's arrival to the FAKE claude's start in the run it
// triggers, and from the paired owner's chat message (to the FAKE Bot API
// server) to the FAKE claude's start in the chat turn, each beside
// `docker run --rm IMAGE true` on the same image, interleaved round by
// round. Starts are read from the runs' log, in the kernel's uptime (10 ms
// steps), which the containers share with the host. Reported: the
// medians and their ratios to the anchor (goal ≤ 1.5).
func BenchmarkServe(b *testing.B) {
	s, fake := newTelegramServe(b)
	fake.Send(owner, "/start "+s.pair(b))
	fake.Wait(b, time.Minute, "the owner to be paired", func(v telegramtest.View) bool { return len(v.Sent(owner)) > 0 })
	// waitStart waits for run number n (1-based) to start and its end to
	// be recorded, and returns when it started.
	waitStart := func(n int) time.Duration {
		var at string
		waitFor(b, 3*time.Minute, fmt.Sprintf("run %d to start", n), func() bool {
			if l := runsLog(s.ws, "start"); len(l) >= n {
				at = l[n-1]
				return true
			}
			return false
		})
		waitFor(b, 3*time.Minute, fmt.Sprintf("run %d to end", n), func() bool { return len(runsLog(s.ws, "end")) >= n })
		return parseUptime(b, at)
	}
	var hook, chat, bare []time.Duration
	n := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		docker(b, "run", "--rm", "--label", "hobbs-e2e="+runID, "--entrypoint", "true", image)
		bare = append(bare, time.Since(t0))

		sent := uptime(b)
		r := s.deliver(b, "new-issues", issueBody("octo/bench", i+1, "Bench", "Nothing to do."), fmt.Sprintf("bench-%d", i), hookSecret)
		if r.code != 202 {
			b.Fatalf("delivery: %d %+v", r.code, r)
		}
		n++
		hook = append(hook, waitStart(n)-sent)
		tk := s.taskOf(b, r.Job, time.Minute)
		fake.Wait(b, 3*time.Minute, "the run's end delivered", func(v telegramtest.View) bool {
			for _, m := range v.Sent(owner) {
				if strings.Contains(m.Text, "task "+tk) {
					return true
				}
			}
			return false
		})

		sent = uptime(b)
		fake.Send(owner, fmt.Sprintf("hello %d", i))
		n++
		chat = append(chat, waitStart(n)-sent)
		want := 1 + 2*(i+1) // "Paired", then per round the run's end and the reply
		fake.Wait(b, 3*time.Minute, "the chat turn's reply", func(v telegramtest.View) bool { return len(v.Sent(owner)) >= want })
	}
	b.StopTimer()
	a := median(bare)
	b.ReportMetric(float64(median(hook).Milliseconds()), "webhook-ms")
	b.ReportMetric(float64(median(chat).Milliseconds()), "chat-ms")
	b.ReportMetric(float64(a.Milliseconds()), "docker-run-ms")
	b.ReportMetric(float64(median(hook))/float64(a), "webhook/docker")
	b.ReportMetric(float64(median(chat))/float64(a), "chat/docker")
	b.Logf("webhook %v\nchat    %v\ndocker  %v", hook, chat, bare)
}
