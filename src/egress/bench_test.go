package egress

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"testing"

	"github.com/hobbs-agent/hobbs/src/policy"
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

// BenchmarkHTTPSRequest: HTTPS GETs through the proxy to a local TLS
// server, the host opaque (a tunnel) or bound to a secret (intercepted:
// TLS terminated with the session CA, the placeholder replaced, the
// response masked, TLS again to the server). keepalive reuses one
// connection; new makes a connection (and TLS handshakes) per request.
// tests/bench/secrets.sh compares the two.
func BenchmarkHTTPSRequest(b *testing.B) {
	for _, mode := range []string{"tunnel", "intercepted"} {
		for _, conn := range []string{"keepalive", "new"} {
			b.Run(mode+"/"+conn, func(b *testing.B) {
				e := startSecretEnvB(b)
				host := "example.com:" + e.boundPort
				if mode == "tunnel" {
					_, p, _ := net.SplitHostPort(e.other.Listener.Addr().String())
					host = "other.test:" + p
				}
				c := e.clientTrusting(e.other.Certificate())
				if mode == "tunnel" { // the test server's certificate names example.com
					c.Transport.(*http.Transport).TLSClientConfig.ServerName = "example.com"
				}
				if conn == "new" {
					c.Transport.(*http.Transport).DisableKeepAlives = true
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					req, _ := http.NewRequest("GET", "https://"+host+"/bench", nil)
					req.Header.Set("Authorization", "Bearer "+e.ph)
					resp, err := c.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						b.Fatalf("status %d", resp.StatusCode)
					}
				}
			})
		}
	}
}

// BenchmarkHTTPRequest: plain-HTTP GETs through the proxy to a local
// server, the host open (no secrets in the proxy) or bound to a secret
// (the placeholder replaced, the response masked). keepalive reuses one
// connection; new makes a connection per request.
func BenchmarkHTTPRequest(b *testing.B) {
	for _, mode := range []string{"open", "bound"} {
		for _, conn := range []string{"keepalive", "new"} {
			b.Run(mode+"/"+conn, func(b *testing.B) {
				var c *http.Client
				var u, auth string
				if mode == "bound" {
					e := startSecretEnvB(b)
					_, p, _ := net.SplitHostPort(e.plain.Listener.Addr().String())
					c, u, auth = e.client(), "http://plain.test:"+p+"/bench", "Bearer "+e.ph2
				} else {
					tg := newTarget(b, "127.0.0.1")
					e := startProxy(b, basePolicy(tg.port), func(o *Options) { o.Logf = nil })
					pu, _ := url.Parse("http://" + e.addr)
					c = &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
					u = fmt.Sprintf("http://allowed.test:%d/bench", tg.port)
				}
				if conn == "new" {
					c.Transport.(*http.Transport).DisableKeepAlives = true
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					req, _ := http.NewRequest("GET", u, nil)
					if auth != "" {
						req.Header.Set("Authorization", auth)
					}
					resp, err := c.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						b.Fatalf("status %d", resp.StatusCode)
					}
				}
			})
		}
	}
}

// BenchmarkMaskBody: a 1 MiB response body of text with no secret in it
// through the masks of two secrets (every form maskForms lists), read in
// 32 KiB pieces as the ReverseProxy does: the cost of masking per byte.
func BenchmarkMaskBody(b *testing.B) {
	ph, _ := policy.NewPlaceholder(testValue)
	s := maskServer(&policy.Secret{Binding: policy.Binding{Name: "A"}, Placeholder: ph, Value: testValue},
		&policy.Secret{Binding: policy.Binding{Name: "B"}, Placeholder: "hobbs_ph_0123456789abcdefghijklmnopqrstuv", Value: "other-Secret-Value-0123456789"})
	const alpha = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 {}\":,\n"
	buf := make([]byte, 1<<20)
	x := uint32(1)
	for i := range buf {
		x = x*1664525 + 1013904223
		buf[i] = alpha[x>>24%uint32(len(alpha))]
	}
	text := string(buf)
	b.SetBytes(int64(len(buf)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		body := &maskBody{rc: &chunkReader{text, 32 << 10}, m: s.agentMask, keep: s.agentMask.Longest() - 1, atEnd: func() {}}
		io.Copy(io.Discard, body)
	}
}
