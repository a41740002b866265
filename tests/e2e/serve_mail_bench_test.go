package e2e

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/mail/mailtest"
)

// BenchmarkServeMail (make bench, tests/bench/mail.sh; not in CI): the time
// from a DKIM-signed message written into the real Dovecot's Maildir (the
// watcher idling, IMAP IDLE) to the FAKE claude's start in the run it
// triggers, beside `docker run --rm IMAGE true` on the same image,
// interleaved round by round. Starts are read from the runs' log in the
// kernel's uptime, which the containers share with the host. Reported: the
// medians, their ratio to the anchor, and the median of the rounds' own
// ratios, steadier on a loaded machine (goal ≤ 1.5).
func BenchmarkServeMail(b *testing.B) {
	m := newMailEnv(b)
	var mailD, bare []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		docker(b, "run", "--rm", "--label", "hobbs-e2e="+runID, "--entrypoint", "true", image)
		bare = append(bare, time.Since(t0))

		sent := uptime(b)
		m.dovecot.Deliver(b, m.key.Sign(mailtest.Message("alice@example.org", "hobbs@test", fmt.Sprintf("bench %d", i), "Nothing to do.")))
		var at string
		waitFor(b, 3*time.Minute, fmt.Sprintf("run %d to start", i+1), func() bool {
			if l := runsLog(m.ws, "start"); len(l) > i {
				at = l[i]
				return true
			}
			return false
		})
		mailD = append(mailD, parseUptime(b, at)-sent)
		waitFor(b, 3*time.Minute, fmt.Sprintf("run %d's reply", i+1), func() bool {
			select {
			case <-m.smtp.Got:
				return true
			default:
				return false
			}
		})
	}
	b.StopTimer()
	a := median(bare)
	ratios := make([]float64, len(bare))
	for i := range bare {
		ratios[i] = float64(mailD[i]) / float64(bare[i])
	}
	sort.Float64s(ratios)
	b.ReportMetric(float64(median(mailD).Milliseconds()), "mail-ms")
	b.ReportMetric(float64(a.Milliseconds()), "docker-run-ms")
	b.ReportMetric(float64(median(mailD))/float64(a), "mail/docker")
	b.ReportMetric(ratios[len(ratios)/2], "round-ratio-median")
	b.Logf("mail   %v\ndocker %v", mailD, bare)
}
