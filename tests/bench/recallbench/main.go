// Command recallbench measures `hobbs memory recall` on LoCoMo (Maharana et
// al., ACL 2024) against SQLite FTS5's bm25() over the same memories, in
// the same run. Used by tests/bench/recall.sh.
//
//	recallbench -data ../shared/locomo/locomo-dev.json -hobbs ./hobbs
//
// For each conversation it makes an instance with one active memory per
// dialog turn (text "SPEAKER (SESSION DATE): TEXT", created the session's
// date, the documented file format) and an FTS5 table of the same texts.
// Each question of categories 1-4 (multi-hop, temporal, open-domain,
// single-hop; 5 has no answer in the conversation) is asked of both: hobbs
// with the question as it is, FTS5 with the question's words minus the
// stop words recall drops, OR-ed (each word split where FTS5's unicode61
// tokenizer splits it, on apostrophes; pieces of one letter left out). The
// turns named in the question's evidence are scored: recall@5 and @10
// (share of the evidence in the first 5 and 10), MRR@10 (1 / rank of the
// first evidence turn) and milliseconds per query, wall and CPU, each query
// a process of its own for both (hobbs recall --json, sqlite3 -batch),
// taking turns at going first; and hobbs --version, the cost of starting
// hobbs at all.
//
// The data is read where it is: it is licensed for non-commercial research
// and never copied into the repository.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/hobbs-agent/hobbs/src/memory"
)

type sample struct {
	SampleID string `json:"sample_id"`
	QA       []struct {
		Question string   `json:"question"`
		Evidence []string `json:"evidence"`
		Category int      `json:"category"`
	} `json:"qa"`
	Conversation map[string]json.RawMessage `json:"conversation"`
}

type turn struct {
	Speaker string `json:"speaker"`
	DiaID   string `json:"dia_id"`
	Text    string `json:"text"`
}

type question struct {
	conv     int
	category int
	text     string
	evidence map[string]bool // dia ids
}

// score sums the metrics of the questions asked of one system.
type score struct {
	r5, r10, mrr float64
	n            int
	dur, cpu     time.Duration
	byCat        map[int]*[2]float64 // recall@5 sum, count
}

func (s *score) add(q question, ranked []string, d, cpu time.Duration) {
	h5, h10, rr := 0, 0, 0.0
	for k, id := range ranked {
		if k == 10 {
			break
		}
		if q.evidence[id] {
			if k < 5 {
				h5++
			}
			h10++
			if rr == 0 {
				rr = 1 / float64(k+1)
			}
		}
	}
	e := float64(len(q.evidence))
	s.r5 += float64(h5) / e
	s.r10 += float64(h10) / e
	s.mrr += rr
	s.n++
	s.dur += d
	s.cpu += cpu
	if s.byCat == nil {
		s.byCat = map[int]*[2]float64{}
	}
	c := s.byCat[q.category]
	if c == nil {
		c = &[2]float64{}
		s.byCat[q.category] = c
	}
	c[0] += float64(h5) / e
	c[1]++
}

func (s *score) metrics() [5]float64 {
	n := float64(s.n)
	return [5]float64{s.r5 / n, s.r10 / n, s.mrr / n, float64(s.dur.Microseconds()) / 1000 / n,
		float64(s.cpu.Microseconds()) / 1000 / n}
}

var evidenceRe = regexp.MustCompile(`D:?(\d+):(\d+)`)

func main() {
	data := flag.String("data", "", "LoCoMo JSON (a list of samples)")
	hobbs := flag.String("hobbs", "hobbs", "hobbs binary")
	sqlite := flag.String("sqlite3", "sqlite3", "sqlite3 command-line shell (with FTS5)")
	work := flag.String("work", "", "directory for the instances and databases (default: a temporary one, removed)")
	flag.Parse()
	if *data == "" {
		fail("-data is required")
	}
	raw, err := os.ReadFile(*data)
	if err != nil {
		fail("%v", err)
	}
	var samples []sample
	if err := json.Unmarshal(raw, &samples); err != nil {
		fail("%s: %v", *data, err)
	}
	dir := *work
	if dir == "" {
		if dir, err = os.MkdirTemp("", "hobbs-recallbench-"); err != nil {
			fail("%v", err)
		}
		defer os.RemoveAll(dir)
	}
	var qs []question
	memories, skipped := 0, 0
	for c, s := range samples {
		home := filepath.Join(dir, fmt.Sprintf("conv%d", c))
		n, err := writeConversation(*hobbs, *sqlite, home, s)
		if err != nil {
			fail("conversation %s: %v", s.SampleID, err)
		}
		memories += n
		for _, qa := range s.QA {
			if qa.Category < 1 || qa.Category > 4 {
				continue
			}
			ev := map[string]bool{}
			for _, e := range qa.Evidence {
				for _, m := range evidenceRe.FindAllStringSubmatch(e, -1) {
					ev["D"+m[1]+":"+m[2]] = true
				}
			}
			if len(ev) == 0 {
				skipped++
				continue
			}
			qs = append(qs, question{conv: c, category: qa.Category, text: qa.Question, evidence: ev})
		}
	}
	// Let the files' time stamps age past the index's racy window, then
	// build each index once (the first recall does).
	time.Sleep(memory.RacyWindow + 100*time.Millisecond)
	for c := range samples {
		if _, _, _, err := recall(*hobbs, filepath.Join(dir, fmt.Sprintf("conv%d", c)), "warm up"); err != nil {
			fail("%v", err)
		}
	}
	var h, f score
	var start, startCPU time.Duration // hobbs --version: starting the process
	for i, q := range qs {
		_, d, cpu, err := run(exec.Command(*hobbs, "--version"))
		if err != nil {
			fail("hobbs --version: %v", err)
		}
		start, startCPU = start+d, startCPU+cpu
		home := filepath.Join(dir, fmt.Sprintf("conv%d", q.conv))
		runH := func() {
			ids, d, cpu, err := recall(*hobbs, home, q.text)
			if err != nil {
				fail("%v", err)
			}
			h.add(q, ids, d, cpu)
		}
		runF := func() {
			ids, d, cpu, err := fts(*sqlite, filepath.Join(home, "fts.db"), q.text)
			if err != nil {
				fail("%v", err)
			}
			f.add(q, ids, d, cpu)
		}
		if i%2 == 0 {
			runH()
			runF()
		} else {
			runF()
			runH()
		}
	}
	hm, fm := h.metrics(), f.metrics()
	fmt.Printf("recall bench: LoCoMo %s: %d conversations, %d memories, %d questions of categories 1-4 (%d without evidence left out)\n",
		filepath.Base(*data), len(samples), memories, len(qs), skipped)
	fmt.Printf("  %-14s %9s %10s %8s %10s %14s\n", "", "recall@5", "recall@10", "MRR@10", "ms/query", "CPU ms/query")
	fmt.Printf("  %-14s %9.3f %10.3f %8.3f %10.1f %14.1f\n", "hobbs recall", hm[0], hm[1], hm[2], hm[3], hm[4])
	fmt.Printf("  %-14s %9.3f %10.3f %8.3f %10.1f %14.1f\n", "FTS5 bm25()", fm[0], fm[1], fm[2], fm[3], fm[4])
	fmt.Printf("  %-14s %9.2f %10.2f %8.2f %10.2f %14.2f\n", "ratio", hm[0]/fm[0], hm[1]/fm[1], hm[2]/fm[2], hm[3]/fm[3], hm[4]/fm[4])
	n := float64(len(qs))
	fmt.Printf("  %-14s %9s %10s %8s %10.1f %14.1f\n", "hobbs start", "", "", "",
		float64(start.Microseconds())/1000/n, float64(startCPU.Microseconds())/1000/n)
	fmt.Printf("  (hobbs start: hobbs --version, the cost of starting the process, part of hobbs recall's figures)\n")
	var cats []int
	for c := range h.byCat {
		cats = append(cats, c)
	}
	sort.Ints(cats)
	fmt.Printf("  recall@5 by category (hobbs / FTS5):")
	for _, c := range cats {
		fmt.Printf("  %d: %.3f / %.3f (%d)", c, h.byCat[c][0]/h.byCat[c][1], f.byCat[c][0]/f.byCat[c][1], int(h.byCat[c][1]))
	}
	fmt.Printf("\n  goal: recall@5 ratio >= 1.15, hobbs <= 20 ms per query\n")
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "recallbench: "+format+"\n", args...)
	os.Exit(1)
}

// writeConversation makes the instance home with one memory file per turn
// of s, and home/fts.db with the same texts. It returns the memories.
func writeConversation(hobbs, sqlite, home string, s sample) (int, error) {
	cmd := exec.Command(hobbs, "init", "--no-input")
	cmd.Env = append(os.Environ(), "HOBBS_HOME="+home)
	if out, err := cmd.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("hobbs init: %v: %s", err, out)
	}
	active := filepath.Join(home, "memory", "active")
	if err := os.MkdirAll(active, 0o755); err != nil {
		return 0, err
	}
	var sql strings.Builder
	sql.WriteString("CREATE VIRTUAL TABLE t USING fts5(id UNINDEXED, text);\nBEGIN;\n")
	n := 0
	for i := 1; ; i++ {
		sess, ok := s.Conversation[fmt.Sprintf("session_%d", i)]
		if !ok {
			break
		}
		var date string
		if err := json.Unmarshal(s.Conversation[fmt.Sprintf("session_%d_date_time", i)], &date); err != nil {
			return 0, err
		}
		created, err := time.Parse("3:04 pm on 2 January, 2006", date)
		if err != nil {
			return 0, fmt.Errorf("session %d: %v", i, err)
		}
		var turns []turn
		if err := json.Unmarshal(sess, &turns); err != nil {
			return 0, err
		}
		for _, t := range turns {
			text := strings.Join(strings.Fields(fmt.Sprintf("%s (%s): %s", t.Speaker, date, t.Text)), " ")
			id := strings.ReplaceAll(t.DiaID, ":", "_")
			file := fmt.Sprintf("---\nid: %s\ntags: []\ncreated: %s\nlast_accessed: null\nreinforced: 0\nsource: locomo\nsupersedes: null\nstatus: active\n---\n\n%s\n",
				id, created.UTC().Format(time.RFC3339), text)
			if err := os.WriteFile(filepath.Join(active, id+".md"), []byte(file), 0o644); err != nil {
				return 0, err
			}
			fmt.Fprintf(&sql, "INSERT INTO t VALUES(%s, %s);\n", sqlQuote(t.DiaID), sqlQuote(text))
			n++
		}
	}
	sql.WriteString("COMMIT;\n")
	cmd = exec.Command(sqlite, "-batch", filepath.Join(home, "fts.db"))
	cmd.Stdin = strings.NewReader(sql.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("sqlite3: %v: %s", err, out)
	}
	return n, nil
}

func sqlQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// run runs cmd and returns its output, wall time and CPU time (user and
// system: on a busy machine the wall time measures the other processes
// too, the CPU time much less).
func run(cmd *exec.Cmd) ([]byte, time.Duration, time.Duration, error) {
	start := time.Now()
	out, err := cmd.Output()
	d := time.Since(start)
	if err != nil {
		return nil, 0, 0, err
	}
	return out, d, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
}

// recall asks hobbs; it returns the dia ids found, best first.
func recall(hobbs, home, q string) ([]string, time.Duration, time.Duration, error) {
	cmd := exec.Command(hobbs, "memory", "recall", "--json", "--limit", "10", q)
	cmd.Env = append(os.Environ(), "HOBBS_HOME="+home)
	out, d, cpu, err := run(cmd)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("hobbs memory recall %q: %v", q, err)
	}
	var list []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(out, &list); err != nil {
		return nil, 0, 0, err
	}
	ids := make([]string, len(list))
	for i, m := range list {
		ids[i] = strings.Replace(m.ID, "_", ":", 1)
	}
	return ids, d, cpu, nil
}

// ftsQuery is the question's words minus the stop words, OR-ed.
func ftsQuery(q string) string {
	var terms []string
	for _, w := range strings.FieldsFunc(strings.ToLower(q), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '\'' || r == '’' || r > 127)
	}) {
		if memory.IsStopWord(w) {
			continue
		}
		for _, p := range strings.FieldsFunc(w, func(r rune) bool { return r == '\'' || r == '’' }) {
			if len([]rune(p)) > 1 {
				terms = append(terms, `"`+p+`"`)
			}
		}
	}
	return strings.Join(terms, " OR ")
}

// fts asks FTS5; it returns the dia ids found, best first.
func fts(sqlite, db, q string) ([]string, time.Duration, time.Duration, error) {
	m := ftsQuery(q)
	if m == "" {
		return nil, 0, 0, nil
	}
	stmt := "SELECT id FROM t WHERE t MATCH " + sqlQuote(m) + " ORDER BY bm25(t) LIMIT 10;"
	out, d, cpu, err := run(exec.Command(sqlite, "-batch", db, stmt))
	if err != nil {
		return nil, 0, 0, fmt.Errorf("sqlite3 %q: %v", stmt, err)
	}
	return strings.Fields(string(out)), d, cpu, nil
}
