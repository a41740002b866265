package serve

import (
	"fmt"
	"sort"
	"testing"
	"time"
)

// BenchmarkFloodAnswers (tests/bench/serve-flood.sh): the listener alone,
// in process, no run started: 5,000 signed deliveries from 500 senders
// against one trigger, one after another; reported, the median answer
// time of the first 500 (the anchor) and of the last 500, and their
// ratio (constant cost per delivery: goal ≤ 1.5).
func BenchmarkFloodAnswers(b *testing.B) {
	var first, last []time.Duration
	for n := 0; n < b.N; n++ {
		f := newFixture(b, "")
		f.clock = time.Now()
		s := f.service()
		took := make([]time.Duration, 0, 5000)
		for i := 0; i < 5000; i++ {
			r := github(issue(i+1, fmt.Sprintf("s%03d", i%500)), "issues", fmt.Sprintf("d-%d-%d", n, i), secret)
			t0 := time.Now()
			send(s, r)
			took = append(took, time.Since(t0))
		}
		first, last = append(first, took[:500]...), append(last, took[4500:]...)
	}
	m := func(d []time.Duration) time.Duration {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return d[len(d)/2]
	}
	a, z := m(first), m(last)
	b.ReportMetric(float64(a.Microseconds()), "first500-µs")
	b.ReportMetric(float64(z.Microseconds()), "last500-µs")
	b.ReportMetric(float64(z)/float64(a), "last/first")
}
