package policy

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"sort"
	"strconv"
	"time"
)

// DefaultDenyRule is the rule a Decision names when no rule allowed a
// target.
const DefaultDenyRule = "default-deny"

// Denied is a target the proxy refused because no rule allowed it.
type Denied struct {
	Target string // host:port as the audit line names it
	Host   string
	Port   int
}

// DeniedSince reads a proxy audit log (AuditLine lines) and
// returns, sorted and once each, the targets refused by the default deny at
// or after start (less a second: the log's clock and the caller's may
// differ by rounding). Lines it cannot read are skipped: the log is the
// proxy's, and another session's proxy may write it at the same time.
func DeniedSince(r io.Reader, start time.Time) []Denied {
	seen := map[string]bool{}
	var out []Denied
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var l AuditLine
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.Time.Before(start.Add(-time.Second)) ||
			l.Event != "egress.deny" || l.Detail.Rule != DefaultDenyRule || seen[l.Subject] {
			continue
		}
		host, port, err := net.SplitHostPort(l.Subject)
		if err != nil {
			continue
		}
		p, _ := strconv.Atoi(port)
		seen[l.Subject] = true
		out = append(out, Denied{Target: l.Subject, Host: host, Port: p})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Target < out[j].Target })
	return out
}
