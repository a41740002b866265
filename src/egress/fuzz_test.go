package egress

import (
	"fmt"
	"testing"
)

// FuzzHostTap: the Host tap never panics, and what it records does not
// depend on how the bytes were split across reads.
func FuzzHostTap(f *testing.F) {
	f.Add([]byte("GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\nPOST http://a/ HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhelloGET / HTTP/1.1\r\nHost: b\r\n\r\n"), uint8(7))
	f.Add([]byte("POST http://a/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n0\r\nT: v\r\n\r\nGET http://a/ HTTP/1.1\nHost: c\n\n"), uint8(3))
	f.Add([]byte("CONNECT a:443 HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n"), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, step uint8) {
		whole := &hostTap{}
		whole.feed(append([]byte(nil), data...))
		split := &hostTap{}
		n := int(step%64) + 1
		for i := 0; i < len(data); i += n {
			end := min(i+n, len(data))
			split.feed(append([]byte(nil), data[i:end]...))
		}
		if whole.lost != split.lost {
			return // a lost tap is reported as unknown either way
		}
		if !whole.lost && fmt.Sprint(whole.queue) != fmt.Sprint(split.queue) {
			t.Fatalf("queue depends on splitting: %v vs %v", whole.queue, split.queue)
		}
	})
}
