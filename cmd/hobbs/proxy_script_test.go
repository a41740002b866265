package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"golang.org/x/sys/unix"
)

// Script commands for the proxy scenarios:
//
//	httptarget NAME        start an HTTP target on 127.0.0.1 at a free port that counts
//	                       the requests it serves; sets $NAME to its port
//	targethits NAME N      assert the target NAME served exactly N requests
//	freeport NAME          set $NAME to a free TCP port on 127.0.0.1
//	waitproxy ADDR [SECS]  wait until the proxy at ADDR answers its health check
//	waitgrep FILE RE [SECS]  wait until FILE has a line matching RE (a proxy's log)
//	pause DURATION         sleep

// pause DURATION: sleep (e.g. 1500ms), for reload scenarios.
func cmdPause(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: pause DURATION")
	}
	d, err := time.ParseDuration(args[0])
	ts.Check(err)
	time.Sleep(d)
}

// waitgrep FILE REGEXP [SECONDS]: wait until FILE (e.g. the stderr of a
// background proxy, redirected) has a line matching REGEXP (default 10 s, a
// safety net: it returns as soon as the line is there).
func cmdWaitGrep(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: waitgrep FILE REGEXP [SECONDS]")
	}
	re, err := regexp.Compile("(?m)" + args[1])
	ts.Check(err)
	limit := 10 * time.Second
	if len(args) > 2 {
		s, err := strconv.Atoi(args[2])
		ts.Check(err)
		limit = time.Duration(s) * time.Second
	}
	for deadline := time.Now().Add(limit); ; time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(ts.MkAbs(args[0]))
		if re.Match(b) {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("%s has no line matching %q after %v:\n%s", args[0], args[1], limit, b)
		}
	}
}

type scriptTarget struct{ hits atomic.Int64 }

// targets are keyed by "<workdir>/<name>" so parallel scripts do not mix;
// targetsMu guards the map they share.
var (
	targetsMu sync.Mutex
	targets   = map[string]*scriptTarget{}
)

func cmdHTTPTarget(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: httptarget NAME")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	tg := &scriptTarget{}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tg.hits.Add(1)
		fmt.Fprintf(w, "target ok host=%s\n", r.Host)
	})}
	go srv.Serve(ln)
	ts.Defer(func() { srv.Close() })
	targetsMu.Lock()
	targets[ts.Getenv("WORK")+"/"+args[0]] = tg
	targetsMu.Unlock()
	ts.Setenv(args[0], strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
}

func cmdTargetHits(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: targethits NAME N")
	}
	targetsMu.Lock()
	tg := targets[ts.Getenv("WORK")+"/"+args[0]]
	targetsMu.Unlock()
	if tg == nil {
		ts.Fatalf("no target %s", args[0])
	}
	if got := strconv.FormatInt(tg.hits.Load(), 10); (got == args[1]) == neg {
		ts.Fatalf("target %s served %s requests, want %s", args[0], got, args[1])
	}
}

func cmdFreePort(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: freeport NAME")
	}
	port, release := freePort(ts)
	ts.Defer(release)
	ts.Setenv(args[0], strconv.Itoa(port))
}

// freePort reserves a free TCP port on 127.0.0.1 until release: a socket
// bound to it, not listening. A port merely found free (listen, close) can
// be handed by the kernel to any other program on the machine before the
// scenario's proxy listens on it (seen: a health probe of a scenario
// reaching an egress test's target). The kernel gives no program asking for
// a free port one that is bound; a program that listens on it with
// SO_REUSEADDR, as Go's net.Listen and so hobbs proxy do, takes it all the
// same; until then a connection to it is refused, as to a free port.
func freePort(ts interface{ Check(error) }) (port int, release func()) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	ts.Check(err)
	release = func() { unix.Close(fd) }
	err = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
	if err == nil {
		err = unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}})
	}
	var sa unix.Sockaddr
	if err == nil {
		sa, err = unix.Getsockname(fd)
	}
	if err != nil {
		release()
		ts.Check(err)
	}
	return sa.(*unix.SockaddrInet4).Port, release
}

func cmdWaitProxy(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 {
		ts.Fatalf("usage: waitproxy ADDR [SECS]")
	}
	limit := 10 * time.Second
	if len(args) > 1 {
		s, err := strconv.Atoi(args[1])
		ts.Check(err)
		limit = time.Duration(s) * time.Second
	}
	if err := waitHealthy(args[0], limit); err != nil {
		ts.Fatalf("%v", err)
	}
}

func waitHealthy(addr string, limit time.Duration) error {
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		resp, err := client.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("proxy at %s not healthy within %v", addr, limit)
}

// TestProxySIGTERMDrains runs `hobbs proxy` as a real child process, opens
// a tunnel through it, sends SIGTERM, and checks that the proxy lets the open
// tunnel finish and exits 0. (testscript's kill cannot send SIGTERM.)
func TestProxySIGTERMDrains(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "hobbs")
	if err := os.Symlink(os.Args[0], bin); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tport := ln.Addr().(*net.TCPAddr).Port
	go (&http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "target ok")
	})}).Serve(ln)
	pol := filepath.Join(dir, "p.yaml")
	os.WriteFile(pol, []byte(fmt.Sprintf("domains: [\"localhost:%d\"]\nallow_private: [127.0.0.0/8, \"::1/128\"]\n", tport)), 0o644)
	port, release := freePort(checker{t})
	defer release()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	var stderr lockedBuffer
	cmd := exec.Command(bin, "proxy", "--listen", addr, "--policy", pol, "--audit", filepath.Join(dir, "audit.log"))
	cmd.Stderr = &stderr
	cmd.Env = append(os.Environ(), "HOBBS_HOME="+filepath.Join(dir, "hobbs"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if err := waitHealthy(addr, 10*time.Second); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT localhost:%d HTTP/1.1\r\nHost: x\r\n\r\n", tport)
	buf := make([]byte, 39)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(buf); err != nil || !strings.HasPrefix(string(buf), "HTTP/1.1 200") {
		t.Fatalf("tunnel: %q %v", buf, err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The open tunnel still works while the proxy drains: once it says so
	// (the bound is a safety net), not after a pause it may not have used.
	for end := time.Now().Add(10 * time.Second); !strings.Contains(stderr.String(), "shutting down: draining"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("proxy not draining after SIGTERM\n%s", stderr.String())
		}
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	resp := make([]byte, 4096)
	n, _ := c.Read(resp)
	if !strings.Contains(string(resp[:n]), "200 OK") {
		t.Fatalf("tunnel cut by SIGTERM: %q", resp[:n])
	}
	c.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("proxy exit: %v\n%s", err, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("proxy did not exit after SIGTERM\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "listening on "+addr) || !strings.Contains(stderr.String(), "stopped") {
		t.Fatalf("stderr:\n%s", stderr.String())
	}
}

// lockedBuffer is a process's output, read while the process writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type checker struct{ t *testing.T }

func (c checker) Check(err error) {
	if err != nil {
		c.t.Fatal(err)
	}
}
