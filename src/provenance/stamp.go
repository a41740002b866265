package provenance

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/hobbs-agent/hobbs/src/memory"
)

// Stamps. A memory shows where it came from: when the host keeps the change
// of an untainted session, or the owner approves a held one, it writes what
// it recorded of the sessions behind it into the memory's frontmatter, as
// `provenance:` (memory.Stamp). Only the host's record counts: whatever a
// session wrote in that field is replaced at the session's end (a tainted
// session's edit is held like any other change), and no decision here reads
// it. A memory file that does not parse is reported and left as it is.

// stampWait is how long the host waits for the memory lock, which a live
// session's hobbs memory may hold, before it leaves a file unstamped.
const stampWait = 2 * time.Second

// record says, in one line, who the sessions were and what they read.
func record(sessions []Session) string {
	var parts []string
	for _, ses := range sessions {
		p := "session " + ses.Name + ", started by " + ses.Origin.String()
		if ses.Tainted {
			p += ", tainted: " + strings.Join(ses.Why, ", ")
		} else {
			p += ", read only trusted hosts"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}

// stamp writes text into the provenance field of the memory file p, whose
// scanned state is cur, and returns its state as stamped. A file that
// changed since it was scanned is left alone: the next end stamps it.
func (s *Store) stamp(st *state, p string, cur fileState, text string) (fileState, error) {
	if kind, _ := Watched(p); kind != "memory" {
		return cur, nil
	}
	if !st.memoryLocked {
		unlock, err := s.Root.Lock(filepath.Join(s.Root.Dir(), "memory", ".lock"), stampWait)
		if err != nil {
			return cur, fmt.Errorf("%s: not stamped with its provenance: %w", p, err)
		}
		defer unlock()
	}
	b, err := s.Root.ReadFile(p, maxFile)
	if err != nil {
		return cur, err
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != cur.Hash {
		return cur, nil
	}
	tier := memory.Active
	if strings.HasPrefix(p, "memory/archive/") {
		tier = memory.Archive
	}
	nb, err := memory.Stamp(b, tier, text)
	if err != nil {
		return cur, fmt.Errorf("%s: not stamped with its provenance: %w", p, err)
	}
	if bytes.Equal(nb, b) {
		return cur, nil
	}
	if err := s.Root.Write(p, nb, 0o644); err != nil {
		return cur, err
	}
	fi, err := s.Root.Lstat(p)
	if err != nil {
		return cur, err
	}
	fst := statOf(fi)
	sum := sha256.Sum256(nb)
	fst.Hash = hex.EncodeToString(sum[:])
	fst.Racy = true // written just now: read its content next time
	return fst, st.pack.put(fst.Hash, nb)
}
