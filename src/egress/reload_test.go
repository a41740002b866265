package egress

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/policy"
)

// reloadEnv serves a proxy watching its policy file, with a target on
// 127.0.0.1 and a policy allowing a.test only. said reports whether the
// proxy has logged a line containing its argument.
func reloadEnv(t *testing.T) (e *proxyEnv, tg *target, pol func(string) string, said func(string) bool) {
	t.Helper()
	tg = newTarget(t, "127.0.0.1")
	pol = func(name string) string {
		return fmt.Sprintf("# comment kept\ndomains:\n  - %s:%d\nallow_private: [127.0.0.1/32]\n", name, tg.port)
	}
	var mu sync.Mutex
	var lines []string
	said = func(s string) bool {
		mu.Lock()
		defer mu.Unlock()
		for _, l := range lines {
			if strings.Contains(l, s) {
				return true
			}
		}
		return false
	}
	e = startProxy(t, pol("a.test"), func(o *Options) {
		o.Debounce = 50 * time.Millisecond
		o.Logf = func(format string, args ...any) {
			t.Logf(format, args...)
			mu.Lock()
			lines = append(lines, fmt.Sprintf(format, args...))
			mu.Unlock()
		}
	})
	if err := e.srv.Watch(t.Context()); err != nil {
		t.Fatal(err)
	}
	return e, tg, pol, said
}

func (e *proxyEnv) allowed(t *testing.T, host string, port int) bool {
	code, _ := e.tunnel(t, fmt.Sprintf("%s:%d", host, port), "")
	return code == 200
}

// switchWithin asserts that a.test becomes denied and b.test allowed, soon
// (the bound is a safety net: on a busy machine the watcher's reload can take
// a while, and the test waits on the switch itself).
func switchWithin(t *testing.T, e *proxyEnv, port int) {
	t.Helper()
	start := time.Now()
	ok := waitFor(10*time.Second, func() bool { return e.Policy().Decide("b.test", port, true).Allow })
	if !ok {
		t.Fatalf("policy did not switch within 10 s")
	}
	t.Logf("switched after %v", time.Since(start))
	if !e.allowed(t, "b.test", port) || e.allowed(t, "a.test", port) {
		t.Fatalf("decisions did not follow the new policy")
	}
}

func (e *proxyEnv) Policy() *policy.Policy { return e.srv.Policy() }

func TestReloadInPlace(t *testing.T) {
	e, tg, pol, _ := reloadEnv(t)
	if !e.allowed(t, "a.test", tg.port) || e.allowed(t, "b.test", tg.port) {
		t.Fatal("initial policy not in force")
	}
	f, err := os.OpenFile(e.policy, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(pol("b.test"))
	f.Close()
	switchWithin(t, e, tg.port)
}

func TestReloadByRename(t *testing.T) {
	e, tg, pol, _ := reloadEnv(t)
	tmp := filepath.Join(filepath.Dir(e.policy), ".policy.yaml.swp")
	if err := os.WriteFile(tmp, []byte(pol("b.test")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, e.policy); err != nil {
		t.Fatal(err)
	}
	switchWithin(t, e, tg.port)
	// A second save by rename is seen too (the watch is on the directory).
	os.WriteFile(tmp, []byte(pol("c.test")), 0o644)
	os.Rename(tmp, e.policy)
	if !waitFor(10*time.Second, func() bool { return e.Policy().Decide("c.test", tg.port, true).Allow }) {
		t.Fatal("second rename not picked up within 10 s")
	}
}

func TestReloadBadPolicyKeepsLastGood(t *testing.T) {
	e, tg, _, said := reloadEnv(t)
	// Saved by rename: written in place, the file would be empty for a
	// moment, a valid policy the watcher could load first on a busy machine.
	tmp := filepath.Join(filepath.Dir(e.policy), ".policy.yaml.swp")
	if err := os.WriteFile(tmp, []byte("domains:\n  - \"*.com\"\nbogus: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, e.policy); err != nil {
		t.Fatal(err)
	}
	if !waitFor(10*time.Second, func() bool { return said("policy reload failed") }) {
		t.Fatal("the watcher did not try the invalid policy")
	}
	if !e.allowed(t, "a.test", tg.port) {
		t.Fatal("an invalid policy replaced the last good one")
	}
	if e.allowed(t, "b.test", tg.port) {
		t.Fatal("an invalid policy opened something")
	}
	if err := e.srv.Reload(); err == nil || !strings.Contains(err.Error(), "policy.yaml:2") {
		t.Fatalf("Reload error %v, want file:line", err)
	}
}

func TestReloadDoesNotCutTunnels(t *testing.T) {
	e, tg, pol, _ := reloadEnv(t)
	c := dialTunnel(t, e.addr, fmt.Sprintf("a.test:%d", tg.port))
	defer c.Close()
	os.WriteFile(e.policy, []byte(pol("b.test")), 0o644)
	switchWithin(t, e, tg.port)
	if err := httpOverConn(c); err != nil {
		t.Fatalf("existing tunnel cut by reload: %v", err)
	}
}

// A change between the policy's load and the watch's start (the proxy
// loads its policy, then watches it) is applied when the watch starts, not
// missed until the next change: it could be the user's tightening.
func TestReloadChangeBeforeTheWatch(t *testing.T) {
	tg := newTarget(t, "127.0.0.1")
	pol := func(name string) string {
		return fmt.Sprintf("domains:\n  - %s:%d\nallow_private: [127.0.0.1/32]\n", name, tg.port)
	}
	e := startProxy(t, pol("a.test"), func(o *Options) { o.Debounce = 50 * time.Millisecond })
	if err := os.WriteFile(e.policy, []byte(pol("b.test")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := e.srv.Watch(t.Context()); err != nil {
		t.Fatal(err)
	}
	switchWithin(t, e, tg.port)
}
