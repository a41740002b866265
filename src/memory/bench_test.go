package memory

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/instance"
)

// Benchmarks of what a host or agent command costs on a realistic instance:
// a corpus shaped like tests/bench/memgen's (about 400 bytes a file),
// HOBBS_BENCH_ARCHIVE archived + HOBBS_BENCH_ACTIVE active memories
// (default 20000 + 2000), built once per test binary. Each iteration is one
// command's work with a fresh Store, the index already built and trusted.
//
//	go test ./src/memory -run '^$' -bench . -count 5

const benchRare = "zanzibarquokka"

var (
	benchOnce sync.Once
	benchIn   instance.Instance
	benchErr  error
	benchDirs []string
)

func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range benchDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

func benchEnv(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// benchInstance returns the shared benchmark instance, its index built and
// its time stamps old enough to be trusted.
func benchInstance(b *testing.B) instance.Instance {
	benchOnce.Do(func() {
		dir, err := os.MkdirTemp("", "hobbs-membench-")
		if err != nil {
			benchErr = err
			return
		}
		benchDirs = append(benchDirs, dir)
		in, _ := instance.At(dir)
		benchIn = in
		benchErr = genCorpus(in, benchEnv("HOBBS_BENCH_ARCHIVE", 20000), benchEnv("HOBBS_BENCH_ACTIVE", 2000))
		if benchErr != nil {
			return
		}
		// Let the racy window pass, then build and trust the index.
		time.Sleep(RacyWindow + 100*time.Millisecond)
		s := &Store{In: in}
		if _, benchErr = s.Search(SearchOptions{Query: benchRare, Scope: ScopeAll, Full: true}); benchErr != nil {
			return
		}
		_, benchErr = s.Search(SearchOptions{Query: benchRare, Scope: ScopeAll})
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchIn
}

// genCorpus writes tests/bench/memgen's corpus (the one make bench uses)
// into in's memory directory by running memgen itself.
func genCorpus(in instance.Instance, archived, active int) error {
	cmd := exec.Command("go", "run", "../../tests/bench/memgen", "-dir", in.MemoryDir(),
		"-archive", strconv.Itoa(archived), "-active", strconv.Itoa(active), "-rare", benchRare)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("memgen: %v\n%s", err, out)
	}
	return nil
}

// cpuTime is the CPU time (user and system) the process used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loop runs f b.N times and reports, besides the wall time, the CPU time
// per operation: on a busy machine the wall time mostly measures the other
// processes, the CPU time much less.
func loop(b *testing.B, f func()) {
	start := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f()
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

// hobbs memory search LITERAL --all
func BenchmarkSearch(b *testing.B) {
	in := benchInstance(b)
	loop(b, func() {
		s := &Store{In: in}
		hits, err := s.Search(SearchOptions{Query: benchRare, Scope: ScopeAll})
		if err != nil || len(hits) != 7 {
			b.Fatalf("%d hits, %v", len(hits), err)
		}
	})
}

// hobbs memory search LITERAL --all --full (every archived file stat'ed)
func BenchmarkSearchFull(b *testing.B) {
	in := benchInstance(b)
	loop(b, func() {
		s := &Store{In: in}
		hits, err := s.Search(SearchOptions{Query: benchRare, Scope: ScopeAll, Full: true})
		if err != nil || len(hits) != 7 {
			b.Fatalf("%d hits, %v", len(hits), err)
		}
	})
}

// hobbs memory context (without the last_accessed update)
func BenchmarkContext(b *testing.B) {
	in := benchInstance(b)
	loop(b, func() {
		s := &Store{In: in}
		c, err := s.BuildContext(ContextOptions{})
		if err != nil || len(c.Memories) == 0 {
			b.Fatalf("%v", err)
		}
	})
}

// hobbs memory list
func BenchmarkList(b *testing.B) {
	in := benchInstance(b)
	loop(b, func() {
		s := &Store{In: in}
		l, err := s.List(ListOptions{})
		if err != nil || len(l) == 0 {
			b.Fatalf("%d, %v", len(l), err)
		}
	})
}

// benchQuery is a question over the benchmark corpus: the rare word and
// three words of one archived memory.
func benchQuery(b *testing.B, in instance.Instance) string {
	names, err := os.ReadDir(in.MemoryArchive())
	if err != nil || len(names) == 0 {
		b.Fatalf("archive: %v", err)
	}
	data, err := os.ReadFile(filepath.Join(in.MemoryArchive(), names[len(names)/2].Name()))
	if err != nil {
		b.Fatal(err)
	}
	words := strings.Fields(string(bodyOf(data)))
	return "what do I know about " + benchRare + " and " + strings.Join(words[:3], " ") + "?"
}

// hobbs memory recall QUESTION --all
func BenchmarkRecall(b *testing.B) {
	in := benchInstance(b)
	q := benchQuery(b, in)
	loop(b, func() {
		s := &Store{In: in}
		got, err := s.Recall(RecallOptions{Query: q, Scope: ScopeAll, Limit: DefaultRecallLimit})
		if err != nil || len(got) != DefaultRecallLimit {
			b.Fatalf("%d recalled, %v", len(got), err)
		}
	})
}

// hobbs memory recall QUESTION (the active tier)
func BenchmarkRecallActive(b *testing.B) {
	in := benchInstance(b)
	q := benchQuery(b, in)
	loop(b, func() {
		s := &Store{In: in}
		if _, err := s.Recall(RecallOptions{Query: q, Limit: DefaultRecallLimit}); err != nil {
			b.Fatal(err)
		}
	})
}

// The first search of an instance, which builds the index (run last: it
// leaves the index just built, not yet trusted).
func BenchmarkIndexBuild(b *testing.B) {
	in := benchInstance(b)
	loop(b, func() {
		b.StopTimer()
		if err := os.RemoveAll(in.MemoryIndex()); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		s := &Store{In: in}
		hits, err := s.Search(SearchOptions{Query: benchRare, Scope: ScopeAll})
		if err != nil || len(hits) != 7 {
			b.Fatalf("%d hits, %v", len(hits), err)
		}
	})
}
