package mail_test

import (
	"context"
	"crypto/tls"
	"errors"
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

// TestWatcherPoll: without IDLE the watcher polls, and hands over what
// arrived once each.
func TestWatcherPoll(t *testing.T) {
	d := mailtest.Start(t)
	x := watch(t, d, d.Password, func(w *mail.Watcher) { w.NoIdle, w.Poll = true, 100*time.Millisecond })
	x.waitStatus(t, mail.StatusUp, 1)
	d.Deliver(t, mailtest.Message("alice@example.org", "hobbs@test", "polled", "hello"))
	x.wait(t, 1)
	x.stop()
	<-x.done
	if len(x.got) != 1 {
		t.Errorf("%d handed over", len(x.got))
	}
}

// TestWatcherDropMidIdle: the server drops the connection while the
// watcher idles, and mail arrives while it is away: it reconnects with
// backoff and hands over every message once, none missed, none twice.
func TestWatcherDropMidIdle(t *testing.T) {
	d := mailtest.Start(t)
	x := watch(t, d, d.Password, nil)
	x.waitStatus(t, mail.StatusUp, 1)
	d.Deliver(t, mailtest.Message("alice@example.org", "hobbs@test", "a", "1"))
	x.wait(t, 1)
	for round := 0; round < 3; round++ {
		d.Kick(t)
		d.Deliver(t, mailtest.Message("alice@example.org", "hobbs@test", fmt.Sprintf("during %d", round), "2"))
		x.wait(t, 1)
		x.waitStatus(t, mail.StatusUp, round+2)
	}
	d.Deliver(t, mailtest.Message("alice@example.org", "hobbs@test", "after", "3"))
	x.wait(t, 1)
	x.stop()
	<-x.done
	seen := map[uint32]bool{}
	for _, f := range x.got {
		if seen[f.UID] {
			t.Errorf("UID %d handed over twice", f.UID)
		}
		seen[f.UID] = true
	}
	if len(x.got) != 5 {
		t.Errorf("%d handed over, want 5", len(x.got))
	}
	downs := 0
	for _, s := range x.statuses {
		if s.Kind == mail.StatusDown {
			downs++
		}
	}
	if downs != 3 {
		t.Errorf("%d down reports for 3 drops: %+v", downs, x.statuses)
	}
}

// TestWatcherWrongPassword: a refused login is one clear error, then no
// retry until AuthBackoff: no storm of logins.
func TestWatcherWrongPassword(t *testing.T) {
	d := mailtest.Start(t)
	x := watch(t, d, "wrong", func(w *mail.Watcher) { w.AuthBackoff = time.Hour })
	x.waitStatus(t, mail.StatusDown, 1)
	// An observation window, not a wait for an event: with MinBackoff at
	// 50ms, a watcher that retried a refused login would log in again
	// several times within it (Dovecot delays each refusal 2s).
	window := time.NewTimer(5 * time.Second)
	<-window.C
	x.stop()
	<-x.done
	if len(x.statuses) != 1 || !x.statuses[0].Auth || !errors.Is(x.statuses[0].Err, mail.ErrAuth) {
		t.Fatalf("statuses %+v", x.statuses)
	}
	logins := strings.Count(d.Log(t), "auth failed") + strings.Count(d.Log(t), "Aborted login")
	if logins != 1 {
		t.Errorf("%d failed logins in Dovecot's log, want 1:\n%s", logins, d.Log(t))
	}
}

// TestWatcherUIDValidity: the folder's UIDVALIDITY differs from the one
// kept (the mailbox was recreated on the server): it is reported, the
// messages there are not handed over again wholesale, and new mail is.
func TestWatcherUIDValidity(t *testing.T) {
	d := mailtest.Start(t)
	x := watch(t, d, d.Password, nil)
	x.waitStatus(t, mail.StatusUp, 1)
	d.Deliver(t, mailtest.Message("alice@example.org", "hobbs@test", "a", "1"))
	x.wait(t, 1)
	x.stop()
	<-x.done
	old := x.state
	y := watch(t, d, d.Password, func(w *mail.Watcher) {
		w.Load = func() (mail.State, error) {
			y0 := mail.State{UIDValidity: old.UIDValidity - 1, LastUID: 0}
			return y0, nil
		}
	})
	y.waitStatus(t, mail.StatusUp, 1)
	d.Deliver(t, mailtest.Message("alice@example.org", "hobbs@test", "b", "2"))
	y.wait(t, 1)
	y.stop()
	<-y.done
	if len(y.got) != 1 || !strings.Contains(string(y.got[0].Raw), "Subject: b") {
		t.Errorf("after the change: %d handed over", len(y.got))
	}
	if s := y.statuses[0]; s.Kind != mail.StatusUIDValidity || s.Old != old.UIDValidity-1 || s.New != old.UIDValidity {
		t.Errorf("statuses %+v", y.statuses)
	}
}

// TestWatcherFlood: 1,000 messages at once are each handed over once, in
// UID order.
func TestWatcherFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 deliveries: the full suite (make test's second pass) runs it")
	}
	d := mailtest.Start(t)
	x := watch(t, d, d.Password, nil)
	x.waitStatus(t, mail.StatusUp, 1)
	for i := 0; i < 1000; i++ {
		d.Deliver(t, mailtest.Message("alice@example.org", "hobbs@test", fmt.Sprintf("n%d", i), "x"))
	}
	x.wait(t, 1000)
	x.stop()
	<-x.done
	for i := 1; i < len(x.got); i++ {
		if x.got[i].UID <= x.got[i-1].UID {
			t.Fatalf("UIDs out of order or twice at %d: %d after %d", i, x.got[i].UID, x.got[i-1].UID)
		}
	}
	if len(x.got) != 1000 {
		t.Errorf("%d handed over", len(x.got))
	}
}

// TestWatcherTooLarge: a 50 MiB message, over the 10 MiB default cap, is
// reported by its size and never fetched.
func TestWatcherTooLarge(t *testing.T) {
	d := mailtest.Start(t)
	x := watch(t, d, d.Password, func(w *mail.Watcher) { w.MaxMessage = mail.DefaultLimits.Message })
	x.waitStatus(t, mail.StatusUp, 1)
	d.Deliver(t, mailtest.Message("alice@example.org", "hobbs@test", "big", strings.Repeat("0123456789abcdef\n", 50<<20/17)))
	x.wait(t, 1)
	x.stop()
	<-x.done
	if len(x.got) != 1 || x.got[0].Raw != nil || x.got[0].Size < 50<<20-100 {
		t.Errorf("the big one: %+v", x.got)
	}
}

// TestWatcherTLS: against Dovecot with TLS required, the watcher logs in
// over STARTTLS and over implicit TLS, verifying the server's certificate;
// one it does not trust is refused before the password is sent.
func TestWatcherTLS(t *testing.T) {
	d := mailtest.StartTLS(t)
	for _, c := range []struct{ mode, addr string }{{"starttls", d.Addr}, {"implicit", d.TLSAddr}} {
		x := watch(t, d, d.Password, func(w *mail.Watcher) {
			w.TLS, w.Addr, w.TLSConfig = c.mode, c.addr, &tls.Config{RootCAs: d.Roots, ServerName: "127.0.0.1"}
		})
		x.waitStatus(t, mail.StatusUp, 1)
		d.Deliver(t, mailtest.Message("alice@example.org", "hobbs@test", c.mode, "x"))
		x.wait(t, 1)
		x.stop()
		<-x.done
	}
	x := watch(t, d, d.Password, func(w *mail.Watcher) { w.TLS, w.Addr = "implicit", d.TLSAddr })
	x.waitStatus(t, mail.StatusDown, 1)
	x.stop()
	<-x.done
	if err := x.statuses[0].Err; err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("an untrusted certificate: %v", err)
	}
	if n := strings.Count(d.Log(t), "Login: user=<"+d.User+">"); n != 2 {
		t.Errorf("%d logins, want the two trusted ones:\n%s", n, d.Log(t))
	}
}

// TestWatcherHold: a message Handle holds (ErrHold) is neither passed
// nor fetched again while Ready says no, however much mail comes after
// it; once Ready says yes it and the later ones are handed over, once
// each, in order. The state stays before the held message, so a restart
// offers it again.
func TestWatcherHold(t *testing.T) {
	d := mailtest.Start(t)
	var mu sync.Mutex
	ready, asked := false, 0
	x := watch(t, d, d.Password, func(w *mail.Watcher) {
		w.HoldRetry = 20 * time.Millisecond
		w.Ready = func() bool { mu.Lock(); defer mu.Unlock(); asked++; return ready }
		handle := w.Handle
		w.Handle = func(ctx context.Context, f mail.Fetched) (bool, error) {
			if _, err := handle(ctx, f); err != nil {
				return false, err
			}
			mu.Lock()
			defer mu.Unlock()
			if !ready {
				return false, mail.ErrHold
			}
			return true, nil
		}
	})
	x.waitStatus(t, mail.StatusUp, 1)
	for i := range 3 {
		d.Deliver(t, mailtest.Message("alice@example.org", "hobbs@test", fmt.Sprintf("held %d", i), "x"))
	}
	x.wait(t, 1)
	time.Sleep(time.Second)
	mu.Lock()
	n := asked
	mu.Unlock()
	x.mu.Lock()
	got, last := len(x.got), x.state.LastUID
	x.mu.Unlock()
	if got != 1 || n < 5 || last != 0 {
		t.Fatalf("while held: %d handed over (want 1), Ready asked %d times, last UID %d (want 0)", got, n, last)
	}
	mu.Lock()
	ready = true
	mu.Unlock()
	x.wait(t, 3)
	time.Sleep(200 * time.Millisecond)
	x.mu.Lock()
	defer x.mu.Unlock()
	var subjects []string
	for _, f := range x.got {
		subjects = append(subjects, strings.SplitN(strings.SplitN(string(f.Raw), "Subject: ", 2)[1], "\r\n", 2)[0])
	}
	if strings.Join(subjects, ",") != "held 0,held 0,held 1,held 2" || x.state.LastUID != 3 {
		t.Errorf("handed over %v, last UID %d", subjects, x.state.LastUID)
	}
}
