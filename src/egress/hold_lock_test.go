package egress

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/approval"
)

// lockStages sets questionLockSeam for the test: each "locking" is sent
// on the returned channel, and locked counts the "locked" ones.
func lockStages(t *testing.T, n int) (locking <-chan struct{}, locked *atomic.Int32) {
	ch := make(chan struct{}, n)
	locked = &atomic.Int32{}
	f := func(stage string) {
		switch stage {
		case "locking":
			ch <- struct{}{}
		case "locked":
			locked.Add(1)
		}
	}
	questionLockSeam.Store(&f)
	t.Cleanup(func() { questionLockSeam.Store(nil) })
	return ch, locked
}

// A new question waits for the approvals directory's lock (here held by
// the host) without holding up the session's other requests: one to a
// host This session allowed, and the first read from an allowed untrusted
// host (which taints the session) complete while the asker still waits
// for the lock.
func TestHoldWaitingForTheLockHoldsUpNothing(t *testing.T) {
	e, tg, d := holdEnv(t, 20*time.Second, "")
	e.allowForSession(t, d, "new.test", tg.port)
	locking, locked := lockStages(t, 1)
	unlock, err := d.Lock()
	if err != nil {
		t.Fatal(err)
	}
	asker := e.async(t, "other.test", tg.port)
	<-locking
	for _, host := range []string{"new.test", "allowed.test"} {
		if r := <-e.async(t, host, tg.port); r.code != 200 {
			t.Errorf("%s: %d %s", host, r.code, r.body)
		}
	}
	if n := locked.Load(); n != 0 {
		t.Errorf("the requests completed only once the asker had stopped waiting for the lock")
	}
	if !e.srv.hold.tainted.Load() {
		t.Error("reading from allowed.test did not taint the session")
	}
	unlock()
	q2 := question(t, d, "other.test")
	if !q2.Tainted {
		t.Errorf("question %+v asked after the taint: want tainted", q2)
	}
	d.Give(q2.ID, approval.Deny, approval.ViaHost, "ada", nil)
	if r := <-asker; r.code != 403 {
		t.Fatalf("other.test: %d %s", r.code, r.body)
	}
}

// waitLocking waits for n requests to reach the directory's lock; the
// bound only ends a hang.
func waitLocking(t *testing.T, locking <-chan struct{}, n int) {
	t.Helper()
	bound := time.After(20 * time.Second)
	for i := range n {
		select {
		case <-locking:
		case <-bound:
			t.Fatalf("%d of %d requests reached the lock; the others wait behind it", i, n)
		}
	}
}

// Requests that found no question and waited together for the lock look
// again once they have it: two to one host make one question, with two
// waiting on it. Requests to new hosts beyond the session's bound are
// refused at once, though those within it wait for the lock: of 12 hosts,
// 8 are asked and 4 refused.
func TestHoldBoundsWhileWaitingForTheLock(t *testing.T) {
	const bound = "not held: 8 questions already wait in this session"
	e, tg, d := holdEnv(t, 20*time.Second, "")
	locking, _ := lockStages(t, 16)
	unlock, err := d.Lock()
	if err != nil {
		t.Fatal(err)
	}
	same := []<-chan result{e.async(t, "same.test", tg.port), e.async(t, "same.test", tg.port)}
	waitLocking(t, locking, 2)
	unlock()
	mustWaitFor(t, 10*time.Second, func() bool { qs, _, _ := d.Waiting(); return len(qs) == 1 && qs[0].Waiting == 2 })
	q := question(t, d, "same.test")
	d.Give(q.ID, approval.Deny, approval.ViaHost, "ada", nil)
	for _, ch := range same {
		if r := <-ch; !strings.Contains(r.body, "the owner denied it") {
			t.Errorf("same.test: %d %s", r.code, r.body)
		}
	}

	if unlock, err = d.Lock(); err != nil {
		t.Fatal(err)
	}
	all := make(chan result, 12)
	for i := range 12 {
		ch := e.async(t, fmt.Sprintf("h%d.test", i), tg.port)
		go func() { all <- <-ch }()
	}
	waitLocking(t, locking, approval.MaxPerSession)
	for range 12 - approval.MaxPerSession { // while the others wait for the lock
		if r := <-all; !strings.Contains(r.body, bound) {
			t.Errorf("want refused for the bound: %d %s", r.code, r.body)
		}
	}
	unlock()
	mustWaitFor(t, 10*time.Second, func() bool { qs, _, _ := d.Waiting(); return len(qs) == approval.MaxPerSession })
	qs, _, _ := d.Waiting()
	for _, q := range qs {
		d.Give(q.ID, approval.Deny, approval.ViaHost, "ada", nil)
	}
	for range approval.MaxPerSession {
		if r := <-all; !strings.Contains(r.body, "the owner denied it") {
			t.Errorf("want denied: %d %s", r.code, r.body)
		}
	}
}
