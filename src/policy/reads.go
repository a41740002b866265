package policy

import (
	"bufio"
	"encoding/json"
	"io"
	"sort"
	"time"
)

// ReadSince reads a proxy audit log and returns, sorted and once each, the
// targets (host:port) whose responses the proxy passed to session at or
// after start (less a second, as DeniedSince): connections and requests
// the proxy opened (egress.open, written before any of the target's bytes
// reach the client, so a connection still open counts), and allowed ones
// with bytes down. It is what the host knows of what a session
// read, for its provenance (src/provenance); lines it cannot parse are
// skipped, and a log it cannot read to its end is an error (what the
// session read is then not known).
func ReadSince(r io.Reader, session string, start time.Time) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var l AuditLine
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.Session != session || l.Time.Before(start.Add(-time.Second)) ||
			!(l.Event == "egress.open" || l.Event == "egress.allow" && l.Detail.BytesDown > 0) || seen[l.Subject] {
			continue
		}
		seen[l.Subject] = true
		out = append(out, l.Subject)
	}
	sort.Strings(out)
	return out, sc.Err()
}
