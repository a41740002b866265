package egress

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func openFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

// fdKinds describes the open fds (for a failure message).
func fdKinds() string {
	ents, _ := os.ReadDir("/proc/self/fd")
	kinds := map[string]int{}
	for _, e := range ents {
		l, _ := os.Readlink("/proc/self/fd/" + e.Name())
		if i := strings.IndexByte(l, ':'); i > 0 {
			l = l[:i]
		}
		kinds[l]++
	}
	return fmt.Sprint(kinds)
}

// TestLoad: 1,000 concurrent clients make 100,000 requests through the proxy
// on loopback — half over CONNECT tunnels, half as plain-HTTP absolute-form
// requests on kept-alive connections — with every check and the audit log
// on. Zero errors allowed; afterwards open fds and goroutines return to the
// baseline measured before the load.
func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test: skipped with -short")
	}
	const clients, perClient = 1000, 100
	tg := newTarget(t, "127.0.0.1")
	e := startProxy(t, basePolicy(tg.port), nil)
	time.Sleep(50 * time.Millisecond)
	baseFDs, baseG, baseKinds := openFDs(), runtime.NumGoroutine(), fdKinds()

	var errCount, okCount atomic.Int64
	var firstErr atomic.Value
	fail := func(err error) {
		errCount.Add(1)
		firstErr.CompareAndSwap(nil, err)
	}
	start := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			var c net.Conn
			var err error
			var req string
			authority := fmt.Sprintf("allowed.test:%d", tg.port)
			if i%2 == 0 {
				c, err = dialTunnelErr(e.addr, authority)
				req = "GET /t HTTP/1.1\r\nHost: " + authority + "\r\n\r\n"
			} else {
				c, err = net.DialTimeout("tcp", e.addr, 10*time.Second)
				req = "GET http://" + authority + "/p HTTP/1.1\r\nHost: " + authority + "\r\n\r\n"
			}
			if err != nil {
				fail(err)
				return
			}
			defer c.Close()
			br := bufio.NewReader(c)
			for j := 0; j < perClient; j++ {
				c.SetDeadline(time.Now().Add(30 * time.Second))
				if _, err := io.WriteString(c, req); err != nil {
					fail(err)
					return
				}
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					fail(err)
					return
				}
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != 200 {
					fail(fmt.Errorf("status %d, %v", resp.StatusCode, err))
					return
				}
				okCount.Add(1)
			}
		}(i)
	}
	wg.Wait()
	elapsed := time.Since(start)
	t.Logf("%d requests from %d clients in %v (%.0f req/s), %d errors", okCount.Load(), clients, elapsed,
		float64(okCount.Load())/elapsed.Seconds(), errCount.Load())
	if n := errCount.Load(); n != 0 {
		t.Fatalf("%d errors; first: %v", n, firstErr.Load())
	}
	if okCount.Load() != clients*perClient {
		t.Fatalf("%d requests succeeded, want %d", okCount.Load(), clients*perClient)
	}
	// Clients are closed; the proxy's pool of idle upstream connections is a
	// bounded cache, dropped here so the count compares with the baseline.
	ok := waitFor(15*time.Second, func() bool {
		e.srv.tr.CloseIdleConnections()
		runtime.GC() // frees the relay's pooled splice pipes
		return e.srv.ActiveTunnels() == 0 && openFDs() <= baseFDs && runtime.NumGoroutine() <= baseG+2
	})
	if !ok {
		buf := make([]byte, 1<<16)
		n := runtime.Stack(buf, true)
		t.Fatalf("not back to baseline: fds %d (base %d: %s; now %s), goroutines %d (base %d), tunnels %d\n%s",
			openFDs(), baseFDs, baseKinds, fdKinds(), runtime.NumGoroutine(), baseG, e.srv.ActiveTunnels(), buf[:n])
	}
}

func dialTunnelErr(proxyAddr, authority string) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", proxyAddr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", authority, authority)
	var head []byte
	b := make([]byte, 1)
	for len(head) < 4 || string(head[len(head)-4:]) != "\r\n\r\n" {
		if _, err := c.Read(b); err != nil {
			c.Close()
			return nil, err
		}
		head = append(head, b[0])
	}
	if string(head[:12]) != "HTTP/1.1 200" {
		c.Close()
		return nil, fmt.Errorf("CONNECT: %s", head)
	}
	return c, nil
}
