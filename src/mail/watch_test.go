package mail_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/mail"
	"github.com/hobbs-agent/hobbs/src/mail/mailtest"
)

// watched runs a Watcher on d and records what it hands over.
type watched struct {
	mu       sync.Mutex
	state    mail.State
	got      []mail.Fetched
	statuses []mail.Status
	handled  chan struct{}
	stop     context.CancelFunc
	done     chan struct{}
}

func watch(t *testing.T, d *mailtest.Dovecot, password string, tune func(w *mail.Watcher)) *watched {
	t.Helper()
	x := &watched{handled: make(chan struct{}, 10000), done: make(chan struct{})}
	w := &mail.Watcher{Addr: d.Addr, TLS: "none", User: d.User, Password: password, Folder: "INBOX",
		Poll: time.Minute, MaxMessage: 1 << 20, MinBackoff: 50 * time.Millisecond, MaxBackoff: 400 * time.Millisecond,
		AuthBackoff: time.Hour,
		Load:        func() (mail.State, error) { x.mu.Lock(); defer x.mu.Unlock(); return x.state, nil },
		Save:        func(s mail.State) error { x.mu.Lock(); defer x.mu.Unlock(); x.state = s; return nil },
		Handle: func(ctx context.Context, f mail.Fetched) (bool, error) {
			x.mu.Lock()
			x.got = append(x.got, f)
			x.mu.Unlock()
			x.handled <- struct{}{}
			return true, nil
		},
		Report: func(s mail.Status) { x.mu.Lock(); x.statuses = append(x.statuses, s); x.mu.Unlock() },
	}
	if tune != nil {
		tune(w)
	}
	ctx, cancel := context.WithCancel(context.Background())
	x.stop = cancel
	go func() { defer close(x.done); _ = w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-x.done })
	return x
}

func (x *watched) waitStatus(t *testing.T, kind string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		x.mu.Lock()
		c := 0
		for _, s := range x.statuses {
			if s.Kind == kind {
				c++
			}
		}
		x.mu.Unlock()
		if c >= n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no %d %q status: %+v", n, kind, x.statuses)
}

func (x *watched) wait(t *testing.T, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		select {
		case <-x.handled:
		case <-time.After(60 * time.Second):
			t.Fatalf("%d of %d messages handed over", i, n)
		}
	}
}

// TestWatcherIdle: against the real Dovecot, messages delivered while the
// watcher idles are handed over once each, in order, and marked seen;
// mail already there at the first look is not new.
func TestWatcherIdle(t *testing.T) {
	d := mailtest.Start(t)
	d.Deliver(t, mailtest.Message("old@example.org", "hobbs@test", "before", "old"))
	x := watch(t, d, d.Password, nil)
	x.waitStatus(t, mail.StatusUp, 1)
	for i := 0; i < 3; i++ {
		d.Deliver(t, mailtest.Message("alice@example.org", "hobbs@test", fmt.Sprintf("m%d", i), "hello"))
	}
	x.wait(t, 3)
	x.stop()
	<-x.done
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.got) != 3 {
		t.Fatalf("%d handed over, want 3", len(x.got))
	}
	for i, f := range x.got {
		if !strings.Contains(string(f.Raw), fmt.Sprintf("Subject: m%d", i)) {
			t.Errorf("message %d: %q", i, f.Raw)
		}
	}
	if x.state.LastUID != x.got[2].UID {
		t.Errorf("state %+v, last %d", x.state, x.got[2].UID)
	}
}
