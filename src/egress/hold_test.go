package egress

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/approval"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// holdEnv serves a proxy that holds requests for session s1, with a
// target on 127.0.0.1 that every name resolves to, a policy naming only
// allowed.test, and deny: denied.test. It returns the host side of the
// approvals directory.
func holdEnv(t *testing.T, wait time.Duration, origin string) (*proxyEnv, *target, approval.Dir) {
	t.Helper()
	tg := newTarget(t, "127.0.0.1")
	dir := t.TempDir()
	pol := fmt.Sprintf("domains:\n  - allowed.test:%d\ndeny:\n  - denied.test\nallow_private: [127.0.0.1/32]\n", tg.port)
	e := startProxy(t, pol, func(o *Options) {
		o.Session = "s1"
		o.Hold = HoldOptions{Wait: wait, Dir: dir, Origin: origin, Poll: 50 * time.Millisecond}
	})
	return e, tg, approval.Dir{Root: safefile.Beneath(dir)}
}

// question waits for the one open question to host and returns it.
func question(t *testing.T, d approval.Dir, host string) approval.Question {
	t.Helper()
	var found approval.Question
	mustWaitFor(t, 10*time.Second, func() bool {
		qs, _, _ := d.Waiting()
		for _, q := range qs {
			if q.Host == host {
				found = q
				return true
			}
		}
		return false
	})
	return found
}

type result struct {
	code int
	body string
	took time.Duration
}

// async sends a plain GET to host through the proxy in the background.
func (e *proxyEnv) async(t *testing.T, host string, port int) <-chan result {
	ch := make(chan result, 1)
	go func() {
		start := time.Now()
		code, body := e.rawLong(t, fmt.Sprintf("GET http://%s:%d/p?secret=1 HTTP/1.1\r\nHost: %s:%d\r\nConnection: close\r\n\r\n", host, port, host, port))
		ch <- result{code, body, time.Since(start)}
	}()
	return ch
}

func TestHoldOnceThenAskedAgain(t *testing.T) {
	e, tg, d := holdEnv(t, 20*time.Second, "")
	ch := e.async(t, "new.test", tg.port)
	q := question(t, d, "new.test")
	if q.Method != "GET" || q.Path != "/p" || q.Waiting != 1 || q.Tainted || !q.Offers(approval.Always) {
		t.Fatalf("question %+v: want GET /p (no query), 1 waiting, untainted, Always offered", q)
	}
	if tg.requests.Load() != 0 {
		t.Fatal("the held request reached the host before an answer")
	}
	if _, _, err := d.Give(q.ID, approval.Once, approval.ViaHost, "ada", nil); err != nil {
		t.Fatal(err)
	}
	if r := <-ch; r.code != 200 {
		t.Fatalf("after Once: %d %s", r.code, r.body)
	}
	// The next request is asked again.
	ch = e.async(t, "new.test", tg.port)
	q2 := question(t, d, "new.test")
	if q2.ID == q.ID {
		t.Fatal("the second request did not ask a new question")
	}
	if _, _, err := d.Give(q2.ID, approval.Deny, approval.ViaHost, "ada", nil); err != nil {
		t.Fatal(err)
	}
	r := <-ch
	if r.code != 403 || !strings.Contains(r.body, "the owner denied it") || !strings.Contains(r.body, "hobbs policy allow") {
		t.Fatalf("after Deny: %d %s", r.code, r.body)
	}
	// A second answer is told the first.
	if _, a, err := d.Give(q2.ID, approval.Once, approval.ViaTelegram, "1", nil); err == nil || a.Answer != approval.Deny || a.Via != approval.ViaHost {
		t.Fatalf("second answer: %v %+v; want the first (deny on the host)", err, a)
	}
	for _, want := range []string{`"event":"egress.hold"`, `"event":"egress.answer","subject":"new.test:` + fmt.Sprint(tg.port) + `","outcome":"once"`,
		`"outcome":"deny"`, "answered on the host by ada"} {
		if !waitFor(5*time.Second, func() bool { return strings.Contains(readFile(t, e.audit), want) }) {
			t.Errorf("audit lacks %s:\n%s", want, readFile(t, e.audit))
		}
	}
}

// allowForSession has a request to host held and answered This session.
func (e *proxyEnv) allowForSession(t *testing.T, d approval.Dir, host string, port int) {
	t.Helper()
	ch := e.async(t, host, port)
	q := question(t, d, host)
	if _, _, err := d.Give(q.ID, approval.Session, approval.ViaHost, "ada", nil); err != nil {
		t.Fatal(err)
	}
	if r := <-ch; r.code != 200 {
		t.Fatalf("after This session: %d %s", r.code, r.body)
	}
}

func TestHoldSessionLetsLaterRequestsPass(t *testing.T) {
	e, tg, d := holdEnv(t, 20*time.Second, "")
	e.allowForSession(t, d, "new.test", tg.port)
	for range 3 {
		start := time.Now()
		if r := <-e.async(t, "new.test", tg.port); r.code != 200 || time.Since(start) > 5*time.Second {
			t.Fatalf("later request: %d %s", r.code, r.body)
		}
	}
	if qs, _, _ := d.Waiting(); len(qs) != 0 {
		t.Fatalf("later requests asked: %+v", qs)
	}
}

func TestHoldTimesOut(t *testing.T) {
	e, tg, d := holdEnv(t, 700*time.Millisecond, "")
	r := <-e.async(t, "new.test", tg.port)
	if r.code != 403 || !strings.Contains(r.body, "no answer from the owner within 700ms") || !strings.Contains(r.body, "hobbs policy allow") {
		t.Fatalf("unanswered: %d %s", r.code, r.body)
	}
	if r.took < 700*time.Millisecond || r.took > 1700*time.Millisecond {
		t.Fatalf("refused after %v; want the hold (700ms), within a second", r.took)
	}
	if all, _ := d.All(); len(all) != 0 {
		t.Fatalf("the expired question stayed: %+v", all)
	}
}

func TestHoldNeverHoldsDenyGuardOrLimitExceeded(t *testing.T) {
	e, tg, d := holdEnv(t, 20*time.Second, "")
	for _, host := range []string{"denied.test", "169.254.169.254"} {
		start := time.Now()
		r := <-e.async(t, host, tg.port)
		if r.code != 403 || time.Since(start) > 3*time.Second {
			t.Fatalf("%s: %d after %v; want 403 at once", host, r.code, time.Since(start))
		}
	}
	if all, _ := d.All(); len(all) != 0 {
		t.Fatalf("asked for a denied host or a guarded address: %+v", all)
	}
	// 12 hosts: 8 questions; the rest refused at once, saying why.
	var wg sync.WaitGroup
	results := make([]result, 12)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = <-e.async(t, fmt.Sprintf("h%d.test", i), tg.port)
		}()
	}
	mustWaitFor(t, 10*time.Second, func() bool { qs, _, _ := d.Waiting(); return len(qs) == approval.MaxPerSession })
	qs, _, _ := d.Waiting()
	for _, q := range qs {
		d.Give(q.ID, approval.Deny, approval.ViaHost, "ada", nil)
	}
	wg.Wait()
	refused := 0
	for _, r := range results {
		if strings.Contains(r.body, "not held: 8 questions already wait in this session") {
			refused++
		}
	}
	if refused != 4 {
		t.Fatalf("%d refused for the limit; want 4: %+v", refused, results)
	}
}

func TestHoldTaintedSessionNotOfferedAlways(t *testing.T) {
	e, tg, d := holdEnv(t, 20*time.Second, "trigger:hook")
	ch := e.async(t, "new.test", tg.port)
	q := question(t, d, "new.test")
	if !q.Tainted || q.Offers(approval.Always) || !strings.Contains(strings.Join(q.Why, ";"), "trigger hook") {
		t.Fatalf("tainted question %+v: want tainted, no Always", q)
	}
	if _, _, err := d.Give(q.ID, approval.Always, approval.ViaHost, "ada", nil); err == nil {
		t.Fatal("Always was taken for a tainted session")
	}
	d.Give(q.ID, approval.Deny, approval.ViaHost, "ada", nil)
	<-ch
}

// A session started by a mail message, or a chat turn carrying someone
// else's text, starts tainted as a webhook's does: its question never
// offers Always.
func TestHoldMailAndUntrustedChatStartTainted(t *testing.T) {
	for _, c := range []struct {
		origin    string
		untrusted bool
		why       string
	}{
		{"mail:inbox", false, "started by mail inbox"},
		{"chat:c1", true, "untrusted input"},
	} {
		t.Run(c.origin, func(t *testing.T) {
			tg := newTarget(t, "127.0.0.1")
			dir := t.TempDir()
			pol := fmt.Sprintf("domains:\n  - allowed.test:%d\nallow_private: [127.0.0.1/32]\n", tg.port)
			e := startProxy(t, pol, func(o *Options) {
				o.Session = "s1"
				o.Hold = HoldOptions{Wait: 20 * time.Second, Dir: dir, Origin: c.origin, Untrusted: c.untrusted, Poll: 50 * time.Millisecond}
			})
			d := approval.Dir{Root: safefile.Beneath(dir)}
			ch := e.async(t, "new.test", tg.port)
			q := question(t, d, "new.test")
			if !q.Tainted || q.Offers(approval.Always) || !strings.Contains(strings.Join(q.Why, ";"), c.why) {
				t.Errorf("question %+v: want tainted (%s), Always not offered", q, c.why)
			}
			d.Give(q.ID, approval.Deny, approval.ViaHost, "ada", nil)
			<-ch
		})
	}
}

func TestHoldTaintedByReading(t *testing.T) {
	e, tg, d := holdEnv(t, 20*time.Second, "")
	if r := <-e.async(t, "allowed.test", tg.port); r.code != 200 {
		t.Fatalf("allowed: %d %s", r.code, r.body)
	}
	ch := e.async(t, "new.test", tg.port)
	q := question(t, d, "new.test")
	if !q.Tainted || q.Offers(approval.Always) {
		t.Fatalf("after reading from allowed.test, question %+v: want tainted", q)
	}
	d.Give(q.ID, approval.Deny, approval.ViaHost, "ada", nil)
	<-ch
}

func TestHoldEndsWithTheSession(t *testing.T) {
	e, tg, d := holdEnv(t, 20*time.Second, "")
	ch := e.async(t, "new.test", tg.port)
	question(t, d, "new.test")
	e.srv.hold.close()
	if r := <-ch; r.code != 403 || !strings.Contains(r.body, "the session ended") {
		t.Fatalf("after the session's end: %d %s", r.code, r.body)
	}
	if d.Root.Exists("s1") {
		t.Fatal("the session's approvals directory outlived it")
	}
}

// rawLong is raw for a request that may be held: a longer deadline, and
// an error as the result (it runs off the test's goroutine).
func (e *proxyEnv) rawLong(t *testing.T, req string) (int, string) {
	c, err := net.DialTimeout("tcp", e.addr, 2*time.Second)
	if err != nil {
		return 0, err.Error()
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		return 0, err.Error()
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: "GET"})
	if err != nil {
		return 0, err.Error()
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	return resp.StatusCode, resp.Status + "\n" + string(body)
}

func TestHoldOneQuestionPerHost(t *testing.T) {
	e, tg, d := holdEnv(t, 20*time.Second, "")
	a := e.async(t, "new.test", tg.port)
	q := question(t, d, "new.test")
	b := e.async(t, "new.test", tg.port)
	mustWaitFor(t, 10*time.Second, func() bool { qs, _, _ := d.Waiting(); return len(qs) == 1 && qs[0].Waiting == 2 })
	if qs, _, _ := d.Waiting(); len(qs) != 1 || qs[0].ID != q.ID {
		t.Fatalf("a second request to the host asked again: %+v", qs)
	}
	if _, _, err := d.Give(q.ID, approval.Once, approval.ViaHost, "ada", nil); err != nil {
		t.Fatal(err)
	}
	for _, ch := range []<-chan result{a, b} {
		if r := <-ch; r.code != 200 {
			t.Fatalf("a request waiting on the question: %d %s", r.code, r.body)
		}
	}
}
