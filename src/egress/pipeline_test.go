package egress

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A plain-HTTP websocket is relayed on a hijacked connection, out of
// net/http's reach: Shutdown ends it once its grace is over, as it does an
// open tunnel, instead of waiting for it without end.
func TestShutdownEndsUpgradedConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, brw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		io.Copy(c, brw) // echo, until the proxy closes the connection
	})}
	go srv.Serve(ln)
	defer srv.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	e := startProxy(t, basePolicy(port), nil)
	c, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintf(c, "GET http://allowed.test:%d/ws HTTP/1.1\r\nHost: allowed.test:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", port, port)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	io.WriteString(c, "ping\n") // the relay is under way once the echo is back
	if line, err := br.ReadString('\n'); line != "ping\n" {
		t.Fatalf("relay: %q %v", line, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // no grace
	done := make(chan error, 1)
	go func() { done <- e.srv.Shutdown(ctx) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown waits for an upgraded connection without end")
	}
	if _, err := io.ReadAll(br); err != nil {
		t.Fatalf("the client's connection was not closed: %v", err)
	}
	if log := readFile(t, e.audit); !strings.Contains(log, `"method":"GET"`) {
		t.Fatalf("no audit line for the upgrade:\n%s", log)
	}
}

// A 101 is relayed only as the answer to the upgrade the request asked for:
// a host that switches to another protocol gets the client a 502, and the
// audit line says why.
func TestUpgradeMustMatchRequest(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n")
	})}
	go srv.Serve(ln)
	defer srv.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	e := startProxy(t, basePolicy(port), nil)
	codes := pipeline(t, e.addr, fmt.Sprintf("GET http://allowed.test:%d/ws HTTP/1.1\r\nHost: allowed.test:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", port, port), 1)
	if codes[0] != http.StatusBadGateway {
		t.Fatalf("a switch to h2c in answer to a websocket upgrade: %d", codes[0])
	}
	e.srv.Shutdown(t.Context()) // flushes the audit log
	if log := readFile(t, e.audit); !strings.Contains(log, "a protocol the request did not ask for") {
		t.Fatalf("audit:\n%s", log)
	}
}
