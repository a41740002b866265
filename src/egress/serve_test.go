package egress

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/policy"
)

func TestReadToken(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	os.WriteFile(file, []byte(" s3cret\n"), 0o600)
	if tok, err := ReadToken(file, ""); err != nil || tok != "s3cret" {
		t.Fatalf("file: %q %v", tok, err)
	}
	t.Setenv("HOBBS_TEST_TOKEN", "fromenv")
	if tok, err := ReadToken("", "HOBBS_TEST_TOKEN"); err != nil || tok != "fromenv" {
		t.Fatalf("env: %q %v", tok, err)
	}
	if _, ok := os.LookupEnv("HOBBS_TEST_TOKEN"); ok {
		t.Fatal("the variable is still in the environment")
	}
	if tok, err := ReadToken("", ""); err != nil || tok != "" {
		t.Fatalf("none: %q %v", tok, err)
	}
	if _, err := ReadToken("", "HOBBS_TEST_TOKEN"); errs.Code(err) != errs.Missing {
		t.Fatalf("unset variable: %v", err)
	}
	if _, err := ReadToken(filepath.Join(dir, "none"), ""); errs.Code(err) != errs.Missing {
		t.Fatalf("missing file: %v", err)
	}
	for _, bad := range []string{"", "user:pass", "two\nlines"} {
		os.WriteFile(file, []byte(bad), 0o600)
		if _, err := ReadToken(file, ""); errs.Code(err) != errs.Usage {
			t.Errorf("token %q: %v", bad, err)
		}
	}
}

func TestProxyConfigChecksItsFiles(t *testing.T) {
	dir := t.TempDir()
	c := ProxyConfig{Policies: []string{filepath.Join(dir, "none.yaml")}}
	if _, err := c.options(); errs.Code(err) != errs.Missing || !strings.Contains(err.Error(), "none.yaml does not exist") {
		t.Fatalf("missing policy: %v", err)
	}
	pol := filepath.Join(dir, "policy.yaml")
	os.WriteFile(pol, []byte("domains: [example.com]\n"), 0o644)
	c = ProxyConfig{Policies: []string{pol}, UpstreamCA: pol}
	if _, err := c.options(); errs.Code(err) != errs.Usage || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Fatalf("bad CA file: %v", err)
	}
	c = ProxyConfig{Policies: []string{pol}, Idle: time.Minute}
	opts, err := c.options()
	if err != nil || opts.IdleTimeout != time.Minute || opts.PolicyFiles[0] != pol || opts.AuthToken != "" {
		t.Fatalf("%+v %v", opts, err)
	}
	if _, err := os.Stat(ImagePolicy); err != nil {
		c = ProxyConfig{}
		if _, err := c.options(); errs.Code(err) != errs.Usage {
			t.Fatalf("no policy at all: %v", err)
		}
	}
}

func TestWaitHealthy(t *testing.T) {
	var unhealthy atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != HealthPath || unhealthy.Load() {
			http.Error(w, "no", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	if err := WaitHealthy(context.Background(), addr, 0); err != nil {
		t.Fatal(err)
	}
	unhealthy.Store(true)
	start := time.Now()
	err := WaitHealthy(context.Background(), addr, 200*time.Millisecond)
	if errs.Code(err) != errs.Failure || !strings.Contains(err.Error(), "answered 503") {
		t.Fatalf("unhealthy: %v", err)
	}
	if time.Since(start) < 200*time.Millisecond {
		t.Fatal("gave up before the wait was over")
	}
	srv.Close()
	if err := Health(addr, time.Second); err == nil || !strings.Contains(err.Error(), "not answering") {
		t.Fatalf("closed: %v", err)
	}
}

func TestServiceLookups(t *testing.T) {
	names := policy.ServiceNames()
	if len(names) != len(policy.Services()) || !slices.IsSorted(names) || !slices.Contains(names, "claude") {
		t.Fatalf("names %q", names)
	}
	for _, s := range policy.Services() {
		if !slices.Equal(policy.ServiceDomains(s.Name), s.Domains) {
			t.Errorf("%s: %q, want %q", s.Name, policy.ServiceDomains(s.Name), s.Domains)
		}
	}
	if policy.ServiceDomains("nope") != nil {
		t.Error("an unknown service has domains")
	}
}

func TestRelayListenerAndDetach(t *testing.T) {
	ln, err := RelayListener("127.0.0.1:0", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// RelayListener takes over the descriptor it is given: a duplicate,
	// as a process inherits one.
	fd, err := syscall.Dup(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	inherited, err := RelayListener("", fd)
	if err != nil || inherited.Addr().String() != ln.Addr().String() {
		t.Fatalf("inherited: %v %v", inherited, err)
	}
	inherited.Close()
	if _, err := RelayListener("256.0.0.1:1", 0); errs.Code(err) != errs.Failure {
		t.Fatalf("bad address: %v", err)
	}
	// The test binary itself, told to run no test, stands for hobbs.
	pid, err := DetachRelay(ln, "-test.run=^$")
	if err != nil || pid <= 0 {
		t.Fatalf("detach: %d %v", pid, err)
	}
	unix, err := net.Listen("unix", filepath.Join(t.TempDir(), "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close()
	if _, err := DetachRelay(unix); err == nil {
		t.Fatal("a unix listener was handed on")
	}
}
