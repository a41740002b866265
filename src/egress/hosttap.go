package egress

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hobbs-agent/hobbs/src/policy"
)

// hostTap watches the bytes the HTTP server reads from a client connection
// and records, for every request head, the Host header as the client sent
// it. Go's HTTP server discards the Host header of an absolute-form request
// (the URL wins, as HTTP requires), so without the tap the proxy could not
// tell that a client sent a Host header naming another site; with it, such a
// request is refused rather than silently corrected.
//
// The tap follows request framing the way the server does (Content-Length,
// chunked bodies), so a body that looks like a request head is skipped, not
// read as one. It stops at the first CONNECT or Upgrade request (the
// connection then leaves HTTP). If it ever loses track (a head over the size
// limit, a framing it does not follow), it reports "unknown" and the request
// is still safe: the forwarded Host is always the URL's.
type hostTap struct {
	net.Conn
	handlers atomic.Int32 // handler calls running for this connection
	mu       sync.Mutex
	buf      []byte // unparsed head or chunk-size bytes
	state    tapState
	left     int64 // body bytes to skip (tapBody, tapChunkData)
	queue    []tapHost
	lost     bool
}

type tapState int

const (
	tapHead tapState = iota
	tapBody
	tapChunkSize
	tapChunkData
	tapTrailer
	tapDone
)

type tapHost struct {
	value   string
	present bool
}

const tapMaxHead = 64 << 10

type tapKey struct{}

// tapListener wraps accepted connections in a hostTap.
type tapListener struct{ net.Listener }

func (l tapListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &hostTap{Conn: c}, nil
}

// tapSet tracks the HTTP server's connections that are not hijacked, so
// that Shutdown can end at once the ones reading a request head: net/http's
// own Shutdown waits for those until the header timeout.
type tapSet struct {
	mu      sync.Mutex
	m       map[*hostTap]struct{}
	cutting bool
}

// connState is the HTTP server's ConnState hook.
func (ts *tapSet) connState(c net.Conn, st http.ConnState) {
	t, ok := c.(*hostTap)
	if !ok {
		return
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	switch st {
	case http.StateNew:
		if ts.m == nil {
			ts.m = map[*hostTap]struct{}{}
		}
		ts.m[t] = struct{}{}
		if ts.cutting {
			t.SetReadDeadline(time.Now())
		}
	case http.StateHijacked, http.StateClosed:
		delete(ts.m, t)
	}
}

// cutHeads ends the reads of every connection, present or accepted from now
// on, that is not in a handler: it is reading a request head (or idle
// between two), and the server closes it when the read fails.
func (ts *tapSet) cutHeads() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.cutting = true
	for t := range ts.m {
		if t.handlers.Load() == 0 {
			t.SetReadDeadline(time.Now())
		}
	}
}

func tapConnContext(ctx context.Context, c net.Conn) context.Context {
	if t, ok := c.(*hostTap); ok {
		return context.WithValue(ctx, tapKey{}, t)
	}
	return ctx
}

func (t *hostTap) Read(p []byte) (int, error) {
	n, err := t.Conn.Read(p)
	if n > 0 {
		t.mu.Lock()
		if t.state != tapDone && !t.lost {
			t.feed(p[:n])
		}
		t.mu.Unlock()
	}
	return n, err
}

// CloseWrite lets the HTTP server half-close as it would the bare socket.
func (t *hostTap) CloseWrite() error {
	if cw, ok := t.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// next returns the Host of the oldest request head not yet claimed; ok is
// false when the tap cannot say.
func (t *hostTap) next() (tapHost, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.queue) == 0 {
		return tapHost{}, false
	}
	h := t.queue[0]
	t.queue = t.queue[1:]
	return h, !t.lost
}

func (t *hostTap) feed(b []byte) {
	defer func() {
		if t.state == tapDone || t.lost {
			t.buf = nil
		}
	}()
	for len(b) > 0 && t.state != tapDone && !t.lost {
		switch t.state {
		case tapBody, tapChunkData:
			n := int64(len(b))
			if n > t.left {
				n = t.left
			}
			t.left -= n
			b = b[n:]
			if t.left == 0 {
				if t.state == tapBody {
					t.state = tapHead
				} else {
					t.state = tapChunkSize
				}
			}
		default: // line-oriented states: tapHead, tapChunkSize, tapTrailer
			t.buf = append(t.buf, b...)
			b = nil
			t.parseLines()
			if t.state == tapBody || t.state == tapChunkData {
				// the rest of buf is body bytes: feed them again
				b, t.buf = t.buf, nil
				continue
			}
			if len(t.buf) > tapMaxHead {
				t.lost = true
			}
		}
	}
}

// parseLines consumes complete units from t.buf in the line-oriented states.
func (t *hostTap) parseLines() {
	for !t.lost && t.state != tapDone {
		switch t.state {
		case tapHead:
			// skip blank lines before a request line, as the server does
			for len(t.buf) > 0 && (t.buf[0] == '\r' || t.buf[0] == '\n') {
				t.buf = t.buf[1:]
			}
			end, skip := headEnd(t.buf)
			if end < 0 {
				return
			}
			head := t.buf[:end]
			t.buf = t.buf[end+skip:]
			t.parseHead(head)
			if t.state == tapBody || t.state == tapDone {
				return
			}
		case tapChunkSize:
			i := bytes.IndexByte(t.buf, '\n')
			if i < 0 {
				return
			}
			line := strings.TrimSpace(string(t.buf[:i]))
			t.buf = t.buf[i+1:]
			if j := strings.IndexByte(line, ';'); j >= 0 {
				line = strings.TrimSpace(line[:j])
			}
			size, err := strconv.ParseInt(line, 16, 64)
			if err != nil || size < 0 {
				t.lost = true
				return
			}
			if size == 0 {
				t.state = tapTrailer
				continue
			}
			t.state, t.left = tapChunkData, size+2 // data and its CRLF
			return
		case tapTrailer:
			i := bytes.IndexByte(t.buf, '\n')
			if i < 0 {
				return
			}
			line := strings.TrimSpace(string(t.buf[:i]))
			t.buf = t.buf[i+1:]
			if line == "" {
				t.state = tapHead
			}
		default:
			return
		}
	}
}

// headEnd finds the blank line ending a head ("\r\n\r\n" or "\n\n"): the
// head's length and how many bytes the terminator takes.
func headEnd(b []byte) (int, int) {
	for i := 0; i < len(b); i++ {
		if b[i] != '\n' {
			continue
		}
		if i+1 < len(b) && b[i+1] == '\n' {
			return i + 1, 1
		}
		if i+2 < len(b) && b[i+1] == '\r' && b[i+2] == '\n' {
			return i + 1, 2
		}
	}
	return -1, 0
}

func (t *hostTap) parseHead(head []byte) {
	lines := strings.Split(strings.ReplaceAll(string(head), "\r\n", "\n"), "\n")
	method, _, _ := strings.Cut(lines[0], " ")
	var h tapHost
	var length int64
	chunked, upgrade := false, false
	for _, l := range lines[1:] {
		name, value, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		value = strings.TrimSpace(value)
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "host":
			if h.present && h.value != value {
				h.value = "\x00conflict" // two different Host headers never match
			} else {
				h.value = value
			}
			h.present = true
		case "content-length":
			n, err := strconv.ParseInt(value, 10, 64)
			if err != nil || n < 0 {
				t.lost = true
			}
			length = n
		case "transfer-encoding":
			chunked = strings.EqualFold(value, "chunked")
			if !chunked {
				t.lost = true
			}
		case "upgrade":
			upgrade = true
		}
	}
	t.queue = append(t.queue, h)
	switch {
	case method == "CONNECT" || upgrade:
		t.state = tapDone // the connection leaves HTTP; nothing more to follow
	case chunked:
		t.state = tapChunkSize
	case length > 0:
		t.state, t.left = tapBody, length
	}
}

// hostMatches reports whether a Host header value names the URL's host and
// port (canonical forms compared; a missing port means 80).
func hostMatches(value, host string, port int) bool {
	hostPart, portText := value, "80"
	if i := strings.LastIndexByte(value, ':'); i >= 0 && !strings.HasSuffix(value, "]") {
		hostPart, portText = value[:i], value[i+1:]
	}
	h, err := policy.NormalizeHost(hostPart)
	if err != nil {
		return false
	}
	p, err := policy.ParsePort(portText)
	return err == nil && p == port && h.String() == host
}
