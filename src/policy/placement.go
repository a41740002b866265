package policy

import (
	"errors"
	"fmt"
	"strings"
)

// Where a bound secret may go. A binding puts its value only in
// credential positions by default: request headers (Authorization, a
// Basic credential, any other header). A binding opts in to other
// positions explicitly (config.yaml in:), for the APIs that need them —
// path (Telegram's bot API: /bot<token>/…), query, body (an OAuth token
// endpoint) — and body and query, where data goes, only for the requests
// it names (requests: ["POST /token"]). Anywhere else the placeholder is
// refused as a leak, naming the variable and the position: a value put
// where data goes could be stored by the host and read back in a form no
// mask recognises.

// Position is a part of a request.
type Position uint8

const (
	InHeader Position = 1 << iota // header values (and names)
	InPath                        // the URL's path
	InQuery                       // the URL's query
	InBody                        // the body
	InMethod                      // the method: never a place for a secret

	// Everywhere is every position.
	Everywhere = InHeader | InPath | InQuery | InBody | InMethod
)

// positionNames are the positions a binding may name, in order.
var positionNames = []struct {
	name string
	pos  Position
}{{"header", InHeader}, {"path", InPath}, {"query", InQuery}, {"body", InBody}}

// String names the position as a leak report says it.
func (p Position) String() string {
	if p == InMethod {
		return "method"
	}
	for _, pn := range positionNames {
		if pn.pos == p {
			return pn.name
		}
	}
	return "request"
}

// Placement is where a binding lets the proxy put its secret in requests
// to its hosts.
type Placement struct {
	in       Position
	names    []string       // as written, in positionNames order
	requests []*RequestRule // nil: every request
}

// DefaultIn is where a binding without in: puts its secret.
var DefaultIn = []string{"header"}

// ParsePlacement parses a binding's in: (nil: DefaultIn) and requests:
// (each "METHODS PATH", as a request rule without allow/deny). Body and
// query need requests.
func ParsePlacement(in, requests []string) (Placement, error) {
	if in == nil {
		in = DefaultIn
	}
	var pl Placement
	if len(in) == 0 {
		return pl, errors.New("in: name at least one position: header, path, query, body")
	}
	for _, n := range in {
		found := false
		for _, pn := range positionNames {
			if n == pn.name {
				pl.in |= pn.pos
				found = true
			}
		}
		if !found {
			return pl, fmt.Errorf("in: %q is not a position: write header, path, query or body", n)
		}
	}
	for _, pn := range positionNames {
		if pl.in&pn.pos != 0 {
			pl.names = append(pl.names, pn.name)
		}
	}
	for _, rq := range requests {
		rr, err := ParseRequestRule("allow " + rq)
		if err != nil || len(strings.Fields(rq)) != 2 {
			return pl, fmt.Errorf("requests: %q: write METHODS PATH, e.g. \"POST /token\" (methods comma-separated or *, a path prefix)", rq)
		}
		pl.requests = append(pl.requests, rr)
	}
	if pl.in&(InBody|InQuery) != 0 && len(pl.requests) == 0 {
		return pl, errors.New("in: body and query carry data, which a host may store and serve back: name the requests that may carry the secret there, e.g. requests: [\"POST /token\"]")
	}
	return pl, nil
}

// Allowed is where the secret may go in a request with this method and
// escaped path: nowhere when the binding names requests and none matches.
func (pl Placement) Allowed(method, escapedPath string) Position {
	if pl.requests == nil {
		return pl.in
	}
	p, ok := plainPath(escapedPath)
	if !ok || method != strings.ToUpper(method) {
		return 0
	}
	for _, rr := range pl.requests {
		if rr.matches(method, p) {
			return pl.in
		}
	}
	return 0
}

// String says where the secret may go: "header", "path, header",
// "body (POST /token)".
func (pl Placement) String() string {
	s := strings.Join(pl.names, ", ")
	if len(pl.requests) > 0 {
		rs := make([]string, len(pl.requests))
		for i, rr := range pl.requests {
			rs[i] = strings.TrimPrefix(rr.Text, "allow ")
		}
		s += " (" + strings.Join(rs, ", ") + ")"
	}
	return s
}
