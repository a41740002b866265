package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/schedule"
)

// An unknown trigger's hook answers 404 in JSON, as every answer of
// /hooks/ is.
func TestUnknownHookJSON(t *testing.T) {
	s := newFixture(t, "").service()
	w := httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/hooks/nope", strings.NewReader("{}")))
	var rep reply
	if w.Code != http.StatusNotFound || !strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") ||
		json.Unmarshal(w.Body.Bytes(), &rep) != nil || rep.Status != "refused" || rep.Reason != "no such trigger" {
		t.Fatalf("unknown hook: %d %q %s", w.Code, w.Header().Get("Content-Type"), w.Body.String())
	}
}

// A second hobbs serve of an instance says that one already serves it,
// with its pid, rather than the listen's "address already in use".
func TestSecondServe(t *testing.T) {
	f := newFixture(t, "")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.service().Run(ctx, ln) }()
	stopped := false
	defer func() {
		if !stopped {
			cancel()
			<-done
		}
	}()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, err := os.Stat(pidFile(f.in)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first service recorded no pid")
		}
		time.Sleep(10 * time.Millisecond)
	}
	f.cfg.Serve.Listen = ln.Addr().String()
	err = f.service().ListenAndRun(context.Background())
	a := errs.AdviceOf(err)
	if a.Kind != AlreadyServing || a.Facts["pid"] != strconv.Itoa(os.Getpid()) ||
		!strings.Contains(err.Error(), "(pid "+strconv.Itoa(os.Getpid())+") already serves") || strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("second serve: %v %+v", err, a)
	}
	cancel()
	<-done
	stopped = true
	if _, err := os.Stat(pidFile(f.in)); !os.IsNotExist(err) {
		t.Errorf("the pid record outlives the service: %v", err)
	}
}

// lockedBuffer is a bytes.Buffer safe for the service's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// A run of one delivery says "1 delivery", not "1 deliveries".
func TestRunLogDeliveryWord(t *testing.T) {
	f := newFixture(t, "")
	f.runner.started = make(chan string, 1)
	s := f.service()
	var log lockedBuffer
	s.opt.Log = &log
	stop := run(t, s)
	defer stop()
	if code, _ := send(s, github(issue(1, "alice"), "issues", "d-1", secret)); code != http.StatusAccepted {
		t.Fatalf("delivery: %d", code)
	}
	<-f.runner.started
	if !strings.Contains(log.String(), ", 1 delivery)") || strings.Contains(log.String(), "1 deliveries") {
		t.Errorf("log:\n%s", log.String())
	}
}

// serve install whose systemctl fails gives serve's advice (no cron
// setting: a scheduler's has nothing to do with it).
func TestInstallFailureAdvice(t *testing.T) {
	dir := t.TempDir()
	ctl := filepath.Join(dir, "systemctl")
	if err := os.WriteFile(ctl, []byte("#!/bin/sh\necho 'Failed to connect to bus' >&2; exit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tpl, err := os.ReadFile("../../dist/hobbs-serve.service")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Install(InstallOptions{Template: tpl, Binary: "/opt/hobbs", Instance: "/home/u/hobbs",
		Schedule: schedule.Options{Scheduler: "systemd", Systemctl: ctl, UnitDir: filepath.Join(dir, "units")}, Root: func() bool { return false }})
	if a := errs.AdviceOf(err); a.Kind != NoUserManager || a.Facts["instance"] != "/home/u/hobbs" {
		t.Fatalf("install with a failing systemctl: %v %+v", err, a)
	}
}
