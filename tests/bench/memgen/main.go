// Command memgen writes a synthetic memory corpus for the memory benchmark
// (tests/bench/memory.sh): seed-format Markdown files of about 400 bytes in
// DIR/archive and DIR/active. A few files carry the rare word the benchmark
// searches for.
//
//	go run ./tests/bench/memgen -dir "$HOBBS_HOME/memory" -archive 100000 -active 10000
package main

import (
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	dir := flag.String("dir", "", "memory directory (gets active/ and archive/)")
	archived := flag.Int("archive", 100000, "archived memories")
	active := flag.Int("active", 10000, "active memories")
	rare := flag.String("rare", "zanzibarquokka", "word planted in -hits files")
	hits := flag.Int("hits", 7, "files containing the rare word")
	seed := flag.Int64("seed", 1, "random seed")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "memgen: -dir is required")
		os.Exit(2)
	}
	r := rand.New(rand.NewSource(*seed))
	words := make([]string, 20000)
	for i := range words {
		var b strings.Builder
		for n := 3 + r.Intn(7); n > 0; n-- {
			b.WriteByte(byte('a' + r.Intn(26)))
		}
		words[i] = b.String()
	}
	tags := []string{"work", "home", "tools", "people", "health", "finance", "travel", "food"}
	total := *archived + *active
	plant := map[int]bool{}
	for len(plant) < *hits && len(plant) < total {
		plant[r.Intn(total)] = true
	}
	for i := 0; i < total; i++ {
		tier, status, n := "archive", "archived", i
		if i >= *archived {
			tier, status, n = "active", "active", i-*archived
		}
		id := fmt.Sprintf("mem_2025%02d%02d_%03d", 1+n%12, 1+n/12%28, n/336)
		var body strings.Builder
		for body.Len() < 260 {
			if body.Len() > 0 {
				body.WriteByte(' ')
			}
			body.WriteString(words[r.Intn(len(words))])
		}
		if plant[i] {
			body.WriteString(" " + strings.ToUpper((*rare)[:1]) + (*rare)[1:])
		}
		content := fmt.Sprintf("---\nid: %s\ntags: [%s]\ncreated: 2025-%02d-%02d\nlast_accessed: null\nreinforced: %d\nsource: generated\nsupersedes: null\nstatus: %s\n---\n\n%s.\n",
			id, tags[r.Intn(len(tags))], 1+n%12, 1+n/12%28, r.Intn(6), status, body.String())
		p := filepath.Join(*dir, tier, id+".md")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "memgen:", err)
			os.Exit(1)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "memgen:", err)
			os.Exit(1)
		}
	}
}
