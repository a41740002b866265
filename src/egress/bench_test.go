package egress

import (
	"fmt"
	"io"
	"net"
	"testing"
)

// BenchmarkTunnel: one CONNECT tunnel per request through the proxy, audit
// on, 16 parallel clients (go test -bench Tunnel -cpu 16). For profiling;
// the comparison with other proxies is tests/bench/proxy.sh.
func BenchmarkTunnel(b *testing.B) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { c.Write([]byte("x")); c.Close() }()
		}
	}()
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	e := startProxy(b, fmt.Sprintf("domains: [\"allowed.test:%d\"]\nallow_private: [127.0.0.0/8]\n", port), func(o *Options) {
		o.Logf = nil
		o.AuthToken = "tok"
	})
	auth := fmt.Sprintf("allowed.test:%d", port)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		buf := make([]byte, 512)
		for pb.Next() {
			c, err := net.Dial("tcp", e.addr)
			if err != nil {
				b.Error(err)
				return
			}
			fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: Basic aG9iYnM6dG9r\r\n\r\n", auth, auth)
			io.ReadAll(c)
			_ = buf
			c.Close()
		}
	})
}
