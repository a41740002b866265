package egress

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hobbs-agent/hobbs/src/errs"
)

// A Relay forwards connections from a local listener to the proxy. In a
// `hobbs run` session the agent's container has no network but loopback: the
// proxy listens on a unix socket shared with it, and the relay, started by
// the image's entry point, gives the agent's programs the TCP address they
// expect (HTTP_PROXY=http://hobbs:TOKEN@127.0.0.1:3128). It only moves bytes:
// every check (auth, policy, guard) is the proxy's.
//
// The agent's command starts while the proxy is still starting: a
// connection that arrives before the proxy listens is held (the dial is
// retried) until the proxy answers or DialTimeout passes, so no program
// sees a refusal for a proxy that is on its way. (A proxy that fails ends
// the session: the launcher watches it.)
type Relay struct {
	To          string        // the proxy: unix:PATH or HOST:PORT
	DialTimeout time.Duration // per connection, retries included (default 30 s)
	Logf        func(format string, args ...any)
}

// relayRetry is the pause between dials of a proxy not yet listening.
const relayRetry = 10 * time.Millisecond

// Serve relays every connection accepted on ln until ln is closed or ctx
// ends. When ctx ends, the connections under way are closed too; Serve
// returns once they are.
func (r *Relay) Serve(ctx context.Context, ln net.Listener) error {
	if r.DialTimeout == 0 {
		r.DialTimeout = 30 * time.Second
	}
	if r.Logf == nil {
		r.Logf = func(string, ...any) {}
	}
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			r.Logf("accept: %v", err)
			time.Sleep(50 * time.Millisecond) // e.g. out of file descriptors
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.serve(ctx, c)
		}()
	}
}

// dial connects to the proxy, again and again while it is not listening
// yet (no socket file, or refused), until DialTimeout.
func (r *Relay) dial(ctx context.Context) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, r.DialTimeout)
	defer cancel()
	for {
		up, err := DialAddr(ctx, r.To)
		if err == nil || !(errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED)) {
			return up, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(relayRetry):
		}
	}
}

// serve relays one client connection.
func (r *Relay) serve(ctx context.Context, c net.Conn) {
	defer c.Close()
	up, err := r.dial(ctx)
	if err != nil {
		r.Logf("proxy at %s: %v", r.To, err)
		return
	}
	defer up.Close()
	stop := context.AfterFunc(ctx, func() { c.Close(); up.Close() })
	defer stop()
	var ended atomic.Int32
	done := make(chan struct{})
	go func() {
		pipe(up, c, &ended)
		close(done)
	}()
	pipe(c, up, &ended)
	<-done
}

// RelayListener is the relay's listener: the TCP listener inherited as
// file descriptor fd (a relay DetachRelay started), or, fd 0, a new one on
// listen.
func RelayListener(listen string, fd int) (net.Listener, error) {
	var ln net.Listener
	var err error
	if fd > 0 {
		// FileListener works on a duplicate: the descriptor itself is
		// closed here, now, rather than by the file's finalizer at a time
		// when its number may belong to another socket.
		f := os.NewFile(uintptr(fd), "relay")
		ln, err = net.FileListener(f)
		f.Close()
	} else {
		ln, err = net.Listen("tcp", listen)
	}
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "listen on %s", listen)
	}
	return ln, nil
}

// DetachRelay starts this executable with args in the background, handing
// it ln, which is already listening (so a client right after this returns
// is not refused), as file descriptor 3; it returns the process's pid.
func DetachRelay(ln net.Listener, args ...string) (int, error) {
	tl, ok := ln.(*net.TCPListener)
	if !ok {
		return 0, errs.Failf("relay listener: not TCP")
	}
	f, err := tl.File()
	if err != nil {
		return 0, errs.Wrap(errs.Failure, err, "relay listener")
	}
	defer f.Close()
	self, err := os.Executable()
	if err != nil {
		return 0, errs.Wrap(errs.Failure, err, "relay")
	}
	c := exec.Command(self, args...)
	c.ExtraFiles = []*os.File{f} // fd 3
	if err := c.Start(); err != nil {
		return 0, errs.Wrap(errs.Failure, err, "start the relay")
	}
	pid := c.Process.Pid
	return pid, c.Process.Release()
}
