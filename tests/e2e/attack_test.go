package e2e

// The attack suite of issue 18: each test runs an attack inside a real
// `hobbs run` session, as the agent could, then checks the outcome on the
// host (never the mechanism that stops it): no key material in any agent
// output, the user's shell start-up files unchanged, nothing outside the
// instance reachable from a later session, the egress record intact, host
// commands that end with FIFOs planted, no setuid file left, no planted git
// configuration run, locks that cannot block host-only operations, secrets
// absent from `docker inspect`.
//
// The attack scripts are tolerant (every step may fail; each prints what
// happened), so that they run against any layout of the agent's mounts.
// Where busybox has no tool for a step (unix socket connect, flock, the
// syscalls that create setuid files) the scripts use attackprobe, a small
// static Go program built here and copied into each test's workspace.

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// attackPrelude starts every attack script: the agent's paths and try,
// which runs a step and prints whether it worked.
const attackPrelude = `I=/home/dev/.hobbs
W=/home/dev/hobbs/workspace
P=$W/.attack/probe
try() { if out=$("$@" 2>&1); then echo "ok: $*${out:+ => $out}"; else echo "failed: $* => $out"; fi; }
# hostinstance: the instance's path on the host, as /proc/self/mountinfo
# gives it (the root of the mount at ~/.hobbs or ~/.hobbs/memory); $1 when
# neither is a mount.
hostinstance() {
	h=$(awk '$5=="/home/dev/.hobbs"{print $4; exit}' /proc/self/mountinfo)
	[ -n "$h" ] || h=$(awk '$5=="/home/dev/.hobbs/memory"{r=$4; sub("/memory$","",r); print r; exit}' /proc/self/mountinfo)
	[ -n "$h" ] || h=$1
	echo "$h"
}
`

// ---------------------------------------------------------------------------
// Harness: sessions and host commands with time limits, the probe helper.

// timedCmd is a started command whose output is gathered.
type timedCmd struct {
	c      *exec.Cmd
	so, se bytes.Buffer
	exited chan struct{} // closed once the command has ended
	err    error         // its Wait's error, once exited is closed
}

func startTimed(t testing.TB, c *exec.Cmd) *timedCmd {
	t.Helper()
	tc := &timedCmd{c: c, exited: make(chan struct{})}
	c.Stdout, c.Stderr = &tc.so, &tc.se
	// Children (the docker CLI) may outlive a killed hobbs with our pipes.
	c.WaitDelay = 5 * time.Second
	if err := c.Start(); err != nil {
		t.Errorf("start %v: %v", c.Args, err)
		tc.err = err
		close(tc.exited)
		return tc
	}
	go func() { tc.err = c.Wait(); close(tc.exited) }()
	t.Cleanup(func() {
		select {
		case <-tc.exited:
		default:
			_ = c.Process.Signal(syscall.SIGTERM)
			select {
			case <-tc.exited:
			case <-time.After(20 * time.Second):
				_ = c.Process.Kill()
				<-tc.exited
			}
		}
	})
	return tc
}

// running reports whether the command has not ended yet.
func (tc *timedCmd) running() bool {
	select {
	case <-tc.exited:
		return false
	default:
		return true
	}
}

// wait waits up to d for the command; past d it is stopped (SIGTERM, then
// SIGKILL) and timedOut is true.
func (tc *timedCmd) wait(d time.Duration) (r result, timedOut bool) {
	select {
	case <-tc.exited:
	case <-time.After(d):
		timedOut = true
		_ = tc.c.Process.Signal(syscall.SIGTERM)
		select {
		case <-tc.exited:
		case <-time.After(10 * time.Second):
			_ = tc.c.Process.Kill()
			<-tc.exited
		}
	}
	r = result{stdout: tc.so.String(), stderr: tc.se.String()}
	if ee, ok := tc.err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if tc.err != nil {
		r.code = -1
		r.stderr += tc.err.Error()
	}
	return r, timedOut
}

// attackSession runs script (after attackPrelude) in a session of its own,
// with args as $1…, and logs what it printed.
func (e *env) attackSession(t *testing.T, tag string, d time.Duration, script string, args ...string) result {
	t.Helper()
	s := e.startAttack(t, tag, script, args...)
	return s.finish(t, d)
}

type attackRun struct {
	tag string
	tc  *timedCmd
}

func (e *env) startAttack(t *testing.T, tag, script string, args ...string) *attackRun {
	t.Helper()
	cmd := append([]string{"sh", "-c", attackPrelude + script + "\ntrue\n", "attack"}, args...)
	return &attackRun{tag: tag, tc: startTimed(t, e.command(nil, e.runArgs(sessionName(t, tag), cmd...)...))}
}

func (s *attackRun) finish(t *testing.T, d time.Duration) result {
	t.Helper()
	r, timedOut := s.tc.wait(d)
	note := ""
	if timedOut {
		note = fmt.Sprintf(", stopped after %v", d)
		t.Errorf("session %s did not end within %v", s.tag, d)
	}
	t.Logf("session %s (exit %d%s)\n--- stdout\n%s--- stderr\n%s", s.tag, r.code, note, r.stdout, r.stderr)
	return r
}

// warmUp runs one session that does nothing, so that whatever a first
// session of an instance does once (an upgrade of its layout) is done
// before the test records the host's state.
func (e *env) warmUp(t *testing.T) {
	t.Helper()
	if r := e.attackSession(t, "warmup-"+attackRand(3), 3*time.Minute, "true"); r.code != 0 {
		t.Fatalf("a session that does nothing failed: exit %d", r.code)
	}
}

// host runs a hobbs command on the host with a time limit and logs it.
func (e *env) host(t *testing.T, d time.Duration, args ...string) (result, bool) {
	t.Helper()
	t0 := time.Now()
	r, timedOut := startTimed(t, e.command(nil, args...)).wait(d)
	t.Logf("host: hobbs %s: exit %d after %v%s\n%s%s", strings.Join(args, " "), r.code,
		time.Since(t0).Round(time.Millisecond), map[bool]string{true: " (TIMED OUT)"}[timedOut], r.stdout, r.stderr)
	return r, timedOut
}

// git runs git on the host as the test user, in a clean configuration.
func (e *env) git(t *testing.T, args ...string) result {
	t.Helper()
	c := exec.Command("git", args...)
	c.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + e.home, "LANG=C", "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0"}
	if os.Getuid() == 0 {
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(testUID), Gid: uint32(testGID)}}
	}
	r, timedOut := startTimed(t, c).wait(60 * time.Second)
	if timedOut {
		t.Errorf("git %s did not end within 60s", strings.Join(args, " "))
	}
	t.Logf("host: git %s: exit %d\n%s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	return r
}

func attackRand(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// attackProbeSrc is attackprobe, the scripts' helper for what busybox cannot
// do. Built once per run (CGO_ENABLED=0) and copied into each workspace.
//
//	probe unix PATH...                       connect to each unix socket, send a line
//	probe flock SECONDS MARKER RELEASE PATH... flock each (creating it), write MARKER,
//	                                         hold until RELEASE exists or SECONDS pass
//	probe suid DIR                           try every way to make a setuid/setgid file in DIR
const attackProbeSrc = `package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"
	"unsafe"
)

var stub = []byte("\x7fELF planted by the agent\n")

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: probe unix|flock|suid ...")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "unix":
		for _, p := range os.Args[2:] {
			c, err := net.DialTimeout("unix", p, 3*time.Second)
			if err != nil {
				fmt.Printf("unix %s: failed: %v\n", p, err)
				continue
			}
			_ = c.SetDeadline(time.Now().Add(2 * time.Second))
			fmt.Fprintf(c, "hello from the agent\n")
			c.Close()
			fmt.Printf("unix %s: CONNECTED\n", p)
		}
	case "flock":
		secs, _ := strconv.Atoi(os.Args[2])
		marker, release := os.Args[3], os.Args[4]
		seen := map[string]bool{}
		var held []*os.File
		for _, p := range os.Args[5:] {
			if seen[p] {
				continue
			}
			seen[p] = true
			f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
			if err != nil {
				f, err = os.Open(p)
			}
			if err != nil {
				fmt.Printf("flock %s: open failed: %v\n", p, err)
				continue
			}
			if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
				fmt.Printf("flock %s: failed: %v\n", p, err)
				f.Close()
				continue
			}
			fmt.Printf("flock %s: HELD\n", p)
			held = append(held, f)
		}
		fmt.Printf("flock: holding %d locks\n", len(held))
		_ = os.WriteFile(marker, []byte(strconv.Itoa(len(held))+"\n"), 0o644)
		t0 := time.Now()
		for time.Since(t0) < time.Duration(secs)*time.Second {
			if _, err := os.Stat(release); err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		fmt.Printf("flock: released after %v\n", time.Since(t0).Round(time.Second))
		runtime.KeepAlive(held)
	case "suid":
		dir := os.Args[2]
		for _, c := range cases {
			p := filepath.Join(dir, "probe-"+c.name)
			_ = os.Remove(p)
			err := c.f(p)
			mode := "none"
			var st syscall.Stat_t
			if syscall.Lstat(p, &st) == nil {
				mode = fmt.Sprintf("%o", st.Mode)
			}
			fmt.Printf("suid %s: err=%v mode=%s\n", p, err, mode)
		}
	}
}

func create(p string, mode uint32) error {
	fd, err := syscall.Open(p, syscall.O_CREAT|syscall.O_WRONLY|syscall.O_EXCL|syscall.O_CLOEXEC, mode)
	if err != nil {
		return err
	}
	_, _ = syscall.Write(fd, stub)
	return syscall.Close(fd)
}

func then(p string, mode uint32, f func() error) error {
	if err := create(p, mode); err != nil {
		return err
	}
	return f()
}

type openHow struct{ flags, mode, resolve uint64 }

func raw(trap uintptr, a ...uintptr) error {
	for len(a) < 6 {
		a = append(a, 0)
	}
	_, _, e := syscall.Syscall6(trap, a[0], a[1], a[2], a[3], a[4], a[5])
	if e != 0 {
		return e
	}
	return nil
}

var fdcwd = -100 // AT_FDCWD

var cases = []struct {
	name string
	f    func(p string) error
}{
	{"creat-4755", func(p string) error { return create(p, 0o4755) }},
	{"creat-2755", func(p string) error { return create(p, 0o2755) }},
	{"chmod-4755", func(p string) error { return then(p, 0o755, func() error { return syscall.Chmod(p, 0o4755) }) }},
	{"chmod-2755", func(p string) error { return then(p, 0o755, func() error { return syscall.Chmod(p, 0o2755) }) }},
	{"fchmod-6755", func(p string) error {
		fd, err := syscall.Open(p, syscall.O_CREAT|syscall.O_WRONLY|syscall.O_EXCL, 0o755)
		if err != nil {
			return err
		}
		defer syscall.Close(fd)
		_, _ = syscall.Write(fd, stub)
		return syscall.Fchmod(fd, 0o6755)
	}},
	{"fchmodat-4755", func(p string) error {
		return then(p, 0o755, func() error { return syscall.Fchmodat(fdcwd, p, 0o4755, 0) })
	}},
	{"fchmodat2-4755", func(p string) error {
		return then(p, 0o755, func() error {
			b, _ := syscall.BytePtrFromString(p)
			return raw(452, uintptr(fdcwd), uintptr(unsafe.Pointer(b)), 0o4755, 0)
		})
	}},
	{"mknod-4755", func(p string) error { return syscall.Mknod(p, syscall.S_IFREG|0o4755, 0) }},
	{"openat2-4755", func(p string) error {
		b, _ := syscall.BytePtrFromString(p)
		how := openHow{flags: uint64(syscall.O_CREAT | syscall.O_WRONLY | syscall.O_EXCL | syscall.O_CLOEXEC), mode: 0o4755}
		return raw(437, uintptr(fdcwd), uintptr(unsafe.Pointer(b)), uintptr(unsafe.Pointer(&how)), unsafe.Sizeof(how))
	}},
	{"tmpfile-4755", func(p string) error {
		fd, err := syscall.Open(filepath.Dir(p), 0x400000|syscall.O_DIRECTORY|syscall.O_WRONLY, 0o4755)
		if err != nil {
			return err
		}
		defer syscall.Close(fd)
		_, _ = syscall.Write(fd, stub)
		src, _ := syscall.BytePtrFromString("/proc/self/fd/" + strconv.Itoa(fd))
		dst, _ := syscall.BytePtrFromString(p)
		return raw(syscall.SYS_LINKAT, uintptr(fdcwd), uintptr(unsafe.Pointer(src)), uintptr(fdcwd), uintptr(unsafe.Pointer(dst)), 0x400)
	}},
}
`

var (
	probeOnce sync.Once
	probeBin  string
	probeErr  error
)

// installProbe copies attackprobe to the workspace's .attack/probe.
func (e *env) installProbe(t *testing.T) {
	t.Helper()
	probeOnce.Do(func() {
		dir := filepath.Join(tmpRoot, "attackprobe-src")
		if probeErr = os.MkdirAll(dir, 0o755); probeErr != nil {
			return
		}
		_ = os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module attackprobe\n\ngo 1.21\n"), 0o644)
		_ = os.WriteFile(filepath.Join(dir, "main.go"), []byte(attackProbeSrc), 0o644)
		probeBin = filepath.Join(tmpRoot, "attackprobe")
		c := exec.Command("go", "build", "-trimpath", "-o", probeBin, ".")
		c.Dir = dir
		c.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
		if out, err := c.CombinedOutput(); err != nil {
			probeErr = fmt.Errorf("go build attackprobe: %v\n%s", err, out)
		}
	})
	if probeErr != nil {
		t.Fatal(probeErr)
	}
	b, err := os.ReadFile(probeBin)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(e.ws, ".attack", "probe")
	writeFile(t, p, string(b))
	if err := os.Chmod(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

// treeSnapshot maps every path under root (symlinks not followed) to its type,
// permission bits, link target or content hash.
func treeSnapshot(root string) map[string]string {
	m := map[string]string{}
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(root, p)
		if err != nil {
			m[rel] = "error " + err.Error()
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			m[rel] = "error " + err.Error()
			return nil
		}
		v := fmt.Sprintf("%v", fi.Mode())
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			v += " -> " + l
		case fi.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			h := sha256.Sum256(b)
			v += " " + hex.EncodeToString(h[:8])
		}
		m[rel] = v
		return nil
	})
	return m
}

func diffSnapshots(before, after map[string]string) []string {
	var d []string
	for k, v := range before {
		if w, ok := after[k]; !ok {
			d = append(d, "removed "+k+" ("+v+")")
		} else if w != v {
			d = append(d, "changed "+k+": "+v+" => "+w)
		}
	}
	for k, v := range after {
		if _, ok := before[k]; !ok {
			d = append(d, "added "+k+" ("+v+")")
		}
	}
	sort.Strings(d)
	return d
}

// inPlace reports whether p names a regular file reached through no
// symlink in any component.
func inPlace(p string) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is a %v, not a regular file", p, fi.Mode().Type())
	}
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		return err
	}
	if r != p {
		return fmt.Errorf("%s resolves through a symlink to %s", p, r)
	}
	return nil
}

// ---------------------------------------------------------------------------
// 1. Vault key theft.

const ageKeyMarker = "AGE-SECRET-KEY-"

// identities finds the files under roots (symlinks not followed) that hold
// an age identity in clear.
func identities(roots ...string) map[string]string {
	m := map[string]string{}
	for _, root := range roots {
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return nil
			}
			if fi, err := d.Info(); err != nil || fi.Size() > 1<<20 {
				return nil
			}
			if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), ageKeyMarker) {
				m[p] = string(b)
			}
			return nil
		})
	}
	return m
}

const vaultMoveScript = `HOSTI=$(hostinstance "$1")
echo "host_instance=$HOSTI"
ls -la $I $I/vault $I/vault/keys 2>&1
echo "== reading the identity directly"
cat $I/vault/keys/identity.txt 2>&1 | head -5
MOVED=
for d in data memory playbooks skills agents logs/tasks logs; do
	if mv $I/vault $I/$d/.vault-aside 2>/dev/null; then MOVED=$d/.vault-aside; break; fi
done
echo "moved=$MOVED"
if [ -n "$MOVED" ]; then
	try ln -s "$HOSTI/$MOVED" $I/vault
fi
ls -la $I $I/vault/ 2>&1
`

const vaultSearchScript = `echo "== mounts"
grep -e /home/dev -e /tmp /proc/self/mountinfo
echo "== identity files under ~/.hobbs and the workspace"
for f in $(find $I $W -name 'identity*' 2>/dev/null); do echo "== file $f"; cat "$f" 2>&1 | head -5; done
echo "== through every path of the mount table"
for m in $(awk '{print $5}' /proc/self/mountinfo | grep -v -e '^/proc' -e '^/sys' -e '^/dev'); do
	for f in $(find "$m" -name 'identity*' 2>/dev/null | head -20); do echo "== file $f"; cat "$f" 2>&1 | head -5; done
done
echo "== anything that looks like an age identity"
find / \( -path /proc -o -path /sys -o -path /dev \) -prune -o -type f -size -256k -print 2>/dev/null > /tmp/files
xargs grep -l 'AGE-SECRET-KEY-' < /tmp/files 2>/dev/null | while read -r f; do echo "== age identity in $f"; head -5 "$f"; done
echo "== done"
`

// TestAttackVaultKeyTheft: the agent moves vault/ aside and leaves a symlink
// to it; in the next session it searches everything it can reach for the
// identity. No age identity may reach the agent's output, and on the host
// the identity file stays where it was, unchanged.
func TestAttackVaultKeyTheft(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.removeVolume(t)
	if r := e.hobbs(nil, "vault", "init"); r.code != 0 {
		t.Fatalf("vault init: %s", r.stderr)
	}
	if r := e.hobbs([]byte(secretValue), "vault", "set", "e2e-token"); r.code != 0 {
		t.Fatalf("vault set: %s", r.stderr)
	}
	e.warmUp(t)
	ids := identities(e.home, e.inst)
	if len(ids) == 0 {
		t.Fatalf("no clear-text age identity under %s or %s after vault init", e.home, e.inst)
	}
	t.Logf("identity files: %v", sortedKeys(ids))

	s1 := e.attackSession(t, "a1-vault-1", 3*time.Minute, vaultMoveScript, e.inst)
	if hi := kv(s1.stdout)["host_instance"]; hi != e.inst {
		t.Logf("note: the instance path computed inside (%q) is not %q", hi, e.inst)
	}
	e.host(t, time.Minute, "vault", "get", "e2e-token")
	e.host(t, time.Minute, "doctor")
	s2 := e.attackSession(t, "a1-vault-2", 3*time.Minute, vaultSearchScript)

	// An age identity in the agent's output: this instance's own key, or
	// any key line (AGE-SECRET-KEY-1 and its bech32 body).
	keyLine := regexp.MustCompile(`AGE-SECRET-KEY-1[0-9A-Z]{50,}`)
	var own []string
	for _, text := range ids {
		own = append(own, keyLine.FindAllString(text, -1)...)
	}
	for i, r := range []result{s1, s2} {
		out := r.stdout + r.stderr
		leaked := keyLine.MatchString(out)
		for _, k := range own {
			leaked = leaked || strings.Contains(out, k)
		}
		if leaked {
			t.Errorf("session %d printed an age identity (%s…): the vault key reached the agent", i+1, ageKeyMarker)
		}
	}
	for p, was := range ids {
		if err := inPlace(p); err != nil {
			t.Errorf("identity file no longer in place: %v", err)
			continue
		}
		if b, _ := os.ReadFile(p); string(b) != was {
			t.Errorf("identity file %s changed", p)
		}
	}
}

func sortedKeys(m map[string]string) []string {
	var k []string
	for p := range m {
		k = append(k, p)
	}
	sort.Strings(k)
	return k
}

// ---------------------------------------------------------------------------
// 2. Host code execution through a host-side append.

// appendTargets are the instance files the agent replaces with a symlink to
// one of the user's shell start-up files (each its own, to tell them apart).
var appendTargets = []struct{ rel, canary string }{
	{"memory/history.jsonl", ".bashrc"},
	{"logs/audit.log", ".profile"},
	{"memory/.lock", ".bash_login"},
	{"memory/history.jsonl.lock", ".bash_logout"},
	{"logs/audit.log.lock", ".zshrc"},
	{".locks/memory.lock", ".zshenv"},
}

const hostAppendScript = `echo "== memories whose text is a command"
hobbs memory add '$(touch /tmp/pwned)' 2>&1
hobbs memory add '$(touch /tmp/pwned2) a second memory' 2>&1
mkdir -p $I/memory/active 2>/dev/null
cat > $I/memory/active/mem_20200101_001.md <<'EOF' || echo "could not write an old memory"
---
id: mem_20200101_001
tags: []
created: 2020-01-01T00:00:00Z
last_accessed: null
reinforced: 0
source: null
supersedes: null
status: active
---

$(touch /tmp/pwned-tidy) an old memory for tidy to archive
EOF
plant() {
	dst=$I/$1; tgt=$2
	if [ -e "$dst" ] || [ -L "$dst" ]; then mv -f "$dst" "$dst.aside" 2>/dev/null || rm -f "$dst" 2>/dev/null; fi
	mkdir -p "$(dirname "$dst")" 2>/dev/null
	if ln -s "$tgt" "$dst" 2>/dev/null; then echo "planted $1 -> $tgt"; else echo "could not plant $1"; fi
}
while [ $# -ge 2 ]; do plant "$1" "$2"; shift 2; done
ls -la $I/memory $I/logs $I/.locks 2>&1
`

// TestAttackHostAppend: the agent replaces files the host appends to (and
// lock files) with symlinks to the user's ~/.bashrc and friends and writes
// memories whose text is a command; the user then runs the memory commands
// that append. Every start-up file stays byte for byte as it was; the host
// commands may fail, but end.
func TestAttackHostAppend(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.removeVolume(t)
	var args []string
	canaries := map[string]string{}
	for _, c := range appendTargets {
		p := filepath.Join(e.home, c.canary)
		canaries[p] = "# " + c.canary + " of the user: canary " + attackRand(4) + "\n"
		writeFile(t, p, canaries[p])
		args = append(args, c.rel, p)
	}
	e.attackSession(t, "a2-append", 3*time.Minute, hostAppendScript, args...)

	var timedOut []string
	run := func(args ...string) result {
		r, to := e.host(t, time.Minute, args...)
		if to {
			timedOut = append(timedOut, strings.Join(args, " "))
		}
		return r
	}
	r := run("memory", "list")
	ids := regexp.MustCompile(`mem_\d{8}_\d{3}`).FindAllString(r.stdout, -1)
	run("memory", "tidy")
	for i, id := range ids {
		if id == "mem_20200101_001" {
			continue
		}
		if i%2 == 0 {
			run("memory", "archive", id)
		} else {
			run("memory", "supersede", id, "a replacement written on the host")
		}
	}
	run("memory", "list", "--all")
	if len(ids) == 0 {
		t.Logf("note: no memory listed on the host; archive and supersede not run")
	}
	if len(timedOut) > 0 {
		t.Errorf("host commands did not end within a minute: %v", timedOut)
	}
	for _, c := range appendTargets {
		c := c
		t.Run(strings.NewReplacer("/", "_", ".", "").Replace(c.rel), func(t *testing.T) {
			p := filepath.Join(e.home, c.canary)
			fi, err := os.Lstat(p)
			if err != nil || !fi.Mode().IsRegular() {
				t.Fatalf("~/%s (linked from %s) is no longer a regular file: %v %v", c.canary, c.rel, fi, err)
			}
			if b, _ := os.ReadFile(p); string(b) != canaries[p] {
				t.Errorf("~/%s changed through the agent's link at %s; now:\n%s", c.canary, c.rel, b)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// 3. Any host path mounted into the next session.

// unixListener is a unix socket on the host, outside any instance, owned
// by the test user (as the user's ssh-agent or D-Bus socket is); it counts
// the connections it gets.
type unixListener struct {
	dir, path string
	accepted  atomic.Int64
	lines     chan string
}

func listenUnix(t *testing.T) *unixListener {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "hobbs-e2e-sock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	u := &unixListener{dir: dir, path: filepath.Join(dir, "agent.sock"), lines: make(chan string, 16)}
	ln, err := net.Listen("unix", u.path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	for _, p := range []string{dir, u.path} {
		_ = os.Chmod(p, 0o755)
		if os.Getuid() == 0 {
			_ = os.Chown(p, testUID, testGID)
		}
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u.accepted.Add(1)
			_ = c.SetDeadline(time.Now().Add(2 * time.Second))
			l, _ := bufio.NewReader(c).ReadString('\n')
			select {
			case u.lines <- l:
			default:
			}
			c.Close()
		}
	}()
	return u
}

const plantMountScript = `echo "== before"; ls -la $I $I/logs 2>&1
case $1 in
.git)
	if [ -e $I/.git ] || [ -L $I/.git ]; then mv $I/.git $I/data/.git-aside 2>&1 || rm -rf $I/.git 2>&1; fi
	try ln -s "$2" $I/.git ;;
logs/egress)
	try mv $I/logs $I/data/logs-aside
	mkdir -p $I/logs 2>/dev/null
	[ -e $I/logs/tasks ] || cp -a $I/data/logs-aside/tasks $I/logs/ 2>/dev/null
	[ -e $I/logs/audit.log ] || cp $I/data/logs-aside/audit.log $I/logs/ 2>/dev/null
	if [ -e $I/logs/egress ] || [ -L $I/logs/egress ]; then mv $I/logs/egress $I/logs/egress-aside 2>&1 || rm -rf $I/logs/egress 2>&1; fi
	try ln -s "$2" $I/logs/egress ;;
esac
echo "== after"; ls -la $I $I/logs 2>&1
`

const readMountScript = `echo "== mounts"; grep -e /home/dev -e /tmp /proc/self/mountinfo
for p in $I/.git $I/logs/egress "$1" "$(dirname "$2")"; do echo "== ls $p"; ls -la "$p/" 2>&1 | head -20; done
for f in $I/.git/secret.txt $I/logs/egress/secret.txt "$1/secret.txt"; do echo "== cat $f"; cat "$f" 2>&1; done
echo "== every link under ~/.hobbs"
find $I -type l 2>/dev/null | while read -r l; do
	echo "== link $l -> $(readlink "$l")"
	ls -la "$l/" 2>&1 | head -20
	for f in "$l"/*; do [ -f "$f" ] && { echo "== cat $f"; head -c 2000 "$f"; echo; }; done
done
echo "== every file reachable under ~/.hobbs and the canary's own path, links followed"
find -L $I "$1" -type f -size -8k 2>/dev/null | grep -v -e '/memory/' -e '/agents/' | while read -r f; do echo "== $f"; head -c 300 "$f"; echo; done
echo "== sockets"
socks=$(find / \( -path /proc -o -path /sys \) -prune -o -type s -print 2>/dev/null)
echo "$socks"
$P unix $I/.git $I/logs/egress $I/logs/egress/agent.sock "$2" $socks
`

// TestAttackHostPathMount: .git, or logs/egress after renaming logs/, made
// a symlink to a directory outside the instance holding a secret, or to a
// unix socket listening on the host (or its directory). The next session
// must neither read the secret, nor connect to the socket, nor make the
// host write into that directory.
func TestAttackHostPathMount(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, rel, kind string }{
		{"git-dir", ".git", "dir"},
		{"git-socket", ".git", "socket"},
		{"egress-dir", "logs/egress", "dir"},
		{"egress-socketdir", "logs/egress", "socketdir"},
	} {
		tc := tc
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.removeVolume(t)
			e.installProbe(t)
			secret := "e2e-canary-secret-" + attackRand(8)
			canary := filepath.Join(e.dir, "outside", "private")
			writeFile(t, filepath.Join(canary, "secret.txt"), secret+"\n")
			_ = os.Chmod(canary, 0o700)
			_ = os.Chmod(filepath.Join(canary, "secret.txt"), 0o600)
			sock := listenUnix(t)
			before := treeSnapshot(canary)
			sockBefore := treeSnapshot(sock.dir)
			target := map[string]string{"dir": canary, "socket": sock.path, "socketdir": sock.dir}[tc.kind]
			s1 := e.attackSession(t, "a3-"+tc.name+"-1", 3*time.Minute, plantMountScript, tc.rel, target)
			s2 := e.attackSession(t, "a3-"+tc.name+"-2", 3*time.Minute, readMountScript, canary, sock.path)
			for i, r := range []result{s1, s2} {
				if strings.Contains(r.stdout+r.stderr, secret) {
					t.Errorf("session %d read the secret of %s through the link at %s", i+1, canary, tc.rel)
				}
			}
			if n := sock.accepted.Load(); n > 0 {
				t.Errorf("the host's socket %s accepted %d connections from the agent (link at %s)", sock.path, n, tc.rel)
			}
			if d := diffSnapshots(before, treeSnapshot(canary)); len(d) > 0 {
				t.Errorf("the directory outside the instance changed: %v", d)
			}
			if d := diffSnapshots(sockBefore, treeSnapshot(sock.dir)); len(d) > 0 {
				t.Errorf("the socket's directory changed: %v", d)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// 4. A planted .git in the instance.

const plantInstanceGitScript = `G=$I/.git
echo "== before"; ls -la $I $G 2>&1 | head -40
if [ -e $G ] && ! [ -e $G/HEAD ]; then mv $G $I/data/.git-aside 2>&1; fi
mkdir -p $G/objects $G/refs/heads 2>&1
[ -e $G/HEAD ] || printf 'ref: refs/heads/main\n' > $G/HEAD 2>&1
if printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = "touch %s-planted; false"\n' "$1" > $G/config; then echo planted_config=ok; else echo planted_config=failed; fi
echo "== after"; ls -la $G 2>&1; cat $G/config 2>&1
`

const rewriteInstanceGitScript = `G=$I/.git
echo "== before"; ls -la $I $G 2>&1 | head -40; cat $I/.gitignore 2>&1
if printf '[core]\n\tfsmonitor = "touch %s-config; false"\n' "$1" >> $G/config 2>/dev/null; then echo config_append=ok; else echo config_append=failed; fi
if cp $G/config /tmp/config 2>/dev/null && printf '[core]\n\tfsmonitor = "touch %s-rename; false"\n' "$1" >> /tmp/config && cp /tmp/config $I/.cfg-new 2>/dev/null && mv $I/.cfg-new $G/config 2>/dev/null; then echo config_rename=ok; else echo config_rename=failed; rm -f $I/.cfg-new 2>/dev/null; fi
for h in post-checkout pre-commit post-commit; do
	if printf '#!/bin/sh\ntouch %s-hook-%s\n' "$1" $h > $G/hooks/$h 2>/dev/null && chmod +x $G/hooks/$h; then echo hook_$h=ok; else echo hook_$h=failed; fi
done
mkdir -p $I/data/evil-common/objects $I/data/evil-common/refs/heads 2>/dev/null
printf 'ref: refs/heads/main\n' > $I/data/evil-common/HEAD 2>/dev/null
printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = "touch %s-commondir; false"\n' "$1" > $I/data/evil-common/config 2>/dev/null
if echo ../data/evil-common > $G/commondir 2>/dev/null; then echo commondir=ok; else echo commondir=failed; fi
if mv $G $I/data/.git-aside 2>/dev/null; then echo git_rename=ok; mkdir -p $G/objects $G/refs/heads; printf 'ref: refs/heads/main\n' > $G/HEAD; printf '[core]\n\tfsmonitor = "touch %s-swapped; false"\n' "$1" > $G/config; else echo git_rename=failed; fi
if printf '# rewritten by the agent\n!vault/keys/\n!vault/keys/*\n' > $I/.gitignore 2>/dev/null; then echo gitignore_write=ok; else echo gitignore_write=failed; fi
if printf '!vault/keys/\n' > $I/.gi-new 2>/dev/null && mv $I/.gi-new $I/.gitignore 2>/dev/null; then echo gitignore_rename=ok; else echo gitignore_rename=failed; rm -f $I/.gi-new 2>/dev/null; fi
echo "== after"; ls -la $I $G 2>&1 | head -40; cat $I/.gitignore 2>&1
`

// TestAttackInstanceGit: the agent plants a .git with core.fsmonitor in an
// instance that has none; in one made with `init --git` it rewrites
// .git/config, hooks and .gitignore. The user's `git status` in the
// instance must run nothing the agent wrote, and an existing .git and
// .gitignore stay as they were.
func TestAttackInstanceGit(t *testing.T) {
	t.Parallel()
	t.Run("planted", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.removeVolume(t)
		canary := filepath.Join(e.dir, "canary")
		e.attackSession(t, "a4-planted", 3*time.Minute, plantInstanceGitScript, canary)
		e.git(t, "-C", e.inst, "status")
		checkNoCanary(t, canary)
	})
	t.Run("init-git", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.removeVolume(t)
		if r := e.hobbs(nil, "init", "--git", "--no-input"); r.code != 0 {
			t.Fatalf("init --git: exit %d %s", r.code, r.stderr)
		}
		e.warmUp(t)
		gi := filepath.Join(e.inst, ".gitignore")
		giBefore, err := os.ReadFile(gi)
		if err != nil {
			t.Fatalf("init --git made no .gitignore: %v", err)
		}
		gitBefore := treeSnapshot(filepath.Join(e.inst, ".git"))
		canary := filepath.Join(e.dir, "canary")
		e.attackSession(t, "a4-initgit", 3*time.Minute, rewriteInstanceGitScript, canary)
		if d := diffSnapshots(gitBefore, treeSnapshot(filepath.Join(e.inst, ".git"))); len(d) > 0 {
			t.Errorf("the instance's .git changed in the session:\n%s", strings.Join(d, "\n"))
		}
		if err := inPlace(gi); err != nil {
			t.Errorf(".gitignore: %v", err)
		} else if b, _ := os.ReadFile(gi); !bytes.Equal(b, giBefore) {
			t.Errorf("the instance's .gitignore was rewritten from the agent:\n%s", b)
		}
		e.git(t, "-C", e.inst, "status")
		checkNoCanary(t, canary)
	})
}

// checkNoCanary fails for every file named prefix* (a planted command ran).
func checkNoCanary(t *testing.T, prefix string) {
	t.Helper()
	m, _ := filepath.Glob(prefix + "*")
	for _, p := range m {
		t.Errorf("a command the agent planted ran on the host: %s exists", p)
	}
}

// ---------------------------------------------------------------------------
// 5. Egress audit forged and erased.

const forgeEgressScript = `echo "== a request the proxy denies"
netprobe get "http://$1/attack" 2>&1
sleep 1
E=$I/logs/egress
ls -la $I/logs $E 2>&1
if ( : > $E/audit.log ) 2>/dev/null; then echo truncate_in_place=ok; else echo truncate_in_place=failed; fi
if echo "$2" >> $E/audit.log 2>/dev/null; then echo append_in_place=ok; else echo append_in_place=failed; fi
if mv $I/logs $I/data/logs-aside 2>/dev/null; then
	echo logs_rename=ok
	( : > $I/data/logs-aside/egress/audit.log ) 2>/dev/null && echo truncate_moved=ok || echo truncate_moved=failed
else
	echo logs_rename=failed
fi
mkdir -p $E 2>/dev/null
if echo "$2" > $E/audit.log.new 2>/dev/null && mv -f $E/audit.log.new $E/audit.log 2>/dev/null; then echo forged_replace=ok; else echo forged_replace=failed; fi
if echo "$2" > $E/audit.log 2>/dev/null; then echo forged_write=ok; else echo forged_write=failed; fi
ls -la $I/logs $E $I/data 2>&1
`

// egressAuditLogs are the proxy's audit logs the host keeps for e: the
// ones under the host's state directory when there are any (a layout that
// keeps them out of the agent's reach), else the instance's
// logs/egress/audit.log.
func egressAuditLogs(e *env) []string {
	var found []string
	state := filepath.Join(e.home, ".local", "state")
	_ = filepath.WalkDir(state, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && strings.Contains(p, "egress") && strings.HasSuffix(p, ".log") {
			found = append(found, p)
		}
		return nil
	})
	if len(found) == 0 {
		found = []string{filepath.Join(e.inst, "logs", "egress", "audit.log")}
	}
	return found
}

// TestAttackEgressAudit: after one request the proxy denies, the agent tries
// to truncate the proxy's audit log, renames logs/ aside and writes a
// forged log in its place. On the host the egress record still holds the
// real decision and no forged line.
func TestAttackEgressAudit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.removeVolume(t)
	denied := "attack-denied-" + runID + ".test"
	forged := `{"time":"2020-01-01T00:00:00Z","actor":"proxy","event":"egress.allow","subject":"forged-` + runID + `.example:443","outcome":"allowed"}`
	s := e.attackSession(t, "a5-egress", 3*time.Minute, forgeEgressScript, denied, forged)
	if !strings.Contains(s.stdout, "status=403") {
		t.Errorf("the request was not denied by the proxy (is the session's proxy up?)")
	}
	logs := egressAuditLogs(e)
	real := false
	for _, p := range logs {
		if err := inPlace(p); err != nil {
			t.Errorf("egress audit log: %v", err)
			continue
		}
		b, _ := os.ReadFile(p)
		t.Logf("%s:\n%s", p, b)
		if strings.Contains(string(b), "forged-"+runID) {
			t.Errorf("the egress audit log %s holds the agent's forged line", p)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, `"egress.deny"`) && strings.Contains(l, denied) {
				real = true
			}
		}
	}
	if !real {
		t.Errorf("the egress audit log (%v) lacks the session's real deny line for %s", logs, denied)
	}
}

// ---------------------------------------------------------------------------
// 6. FIFOs.

const fifoScript = `hobbs memory add 'a memory before the fifos' 2>&1
hobbs memory list > /dev/null 2>&1
ls -la $I/memory/.index 2>&1
fifo() {
	p=$1
	[ -d "$(dirname "$p")" ] || mkdir -p "$(dirname "$p")" 2>/dev/null
	if [ -e "$p" ] || [ -L "$p" ]; then mv -f "$p" "$p.aside" 2>/dev/null || rm -f "$p" 2>/dev/null; fi
	if mkfifo "$p" 2>/dev/null; then echo "fifo $p planted"; else echo "fifo $p refused"; fi
}
idx=$(ls $I/memory/.index/ 2>/dev/null)
for f in $idx active.meta active.tri archive.meta archive.tri; do fifo $I/memory/.index/$f; done
for p in memory/active/mem_20200101_009.md memory/archive/mem_20200101_010.md memory/history.jsonl \
	playbooks/fifo-playbook.md logs/tasks/task_20200101_001.md agents/custom/fifo-agent.md \
	skills/fifo-skill/SKILL.md agents/hobbs/operational.md \
	policy.yaml config.yaml foundation.md claude.md logs/audit.log; do
	fifo $I/$p
done
`

// TestAttackFIFO: the agent plants FIFOs where the host reads, appends and
// lists. Each host command (and the next session) must end within a
// minute; it may fail naming the FIFO.
func TestAttackFIFO(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.removeVolume(t)
	// The session's own launcher is a host command too: it must end.
	e.attackSession(t, "a6-fifo", time.Minute, fifoScript)
	cmds := [][]string{
		{"memory", "tidy"},
		{"memory", "lint"},
		{"memory", "list"},
		{"playbook", "list"},
		{"doctor"},
		e.runArgs(sessionName(t, "a6-next"), "true"),
	}
	// At once, each with its own limit: a hang costs one minute, not six.
	var wg sync.WaitGroup
	var mu sync.Mutex
	var hung []string
	for _, c := range cmds {
		c := c
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, to := e.host(t, time.Minute, c...); to {
				mu.Lock()
				hung = append(hung, "hobbs "+strings.Join(c, " "))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sort.Strings(hung)
	for _, h := range hung {
		t.Errorf("%s did not end within a minute with the agent's FIFOs in the instance", h)
	}
}

// ---------------------------------------------------------------------------
// 7. setuid files.

const setuidScript = `find / \( -path /proc -o -path /sys -o -path /dev \) -prune -o -type f \( -perm -4000 -o -perm -2000 \) -print 2>/dev/null > /tmp/suid-src
echo "setuid files in the image: $(cat /tmp/suid-src | tr '\n' ' ')"
for d in $W/suid $W/deep/er/suid $I/memory/suid $I/memory/active/suid $I/data/suid $I/playbooks/suid $I/skills/suid $I/agents/custom/suid $I/logs/tasks/suid $I/suid; do
	if ! mkdir -p $d 2>/dev/null; then echo "== $d: cannot create"; continue; fi
	echo "== $d"
	for m in u+s g+s 4755 2755 6755; do
		cp /bin/busybox $d/bb-$m 2>/dev/null && try chmod $m $d/bb-$m
	done
	$P suid $d
	for f in $(cat /tmp/suid-src); do try cp -p "$f" $d/cp-p-$(basename "$f"); done
	ls -ln $d
done
`

// TestAttackSetuid: the agent makes setuid/setgid files every way it can,
// in the workspace and in the instance. None may be left on the host.
func TestAttackSetuid(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.removeVolume(t)
	e.installProbe(t)
	e.attackSession(t, "a7-setuid", 3*time.Minute, setuidScript)
	var bad []string
	for _, root := range []string{e.ws, e.inst} {
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			fi, err := os.Lstat(p)
			if err == nil && fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
				bad = append(bad, fmt.Sprintf("%v %s", fi.Mode(), p))
			}
			return nil
		})
	}
	if n := len(bad); n > 0 {
		more := ""
		if n > 30 {
			more = fmt.Sprintf("\n… and %d more", n-30)
			bad = bad[:30]
		}
		t.Errorf("%d setuid/setgid files the agent made are on the host:\n%s%s", n, strings.Join(bad, "\n"), more)
	}
}

// ---------------------------------------------------------------------------
// 8. A workspace that is a git repository.

const workspaceGitScript = `G=$W/.git
echo "== before"; ls -la $G $G/hooks 2>&1 | head -40
if printf '[core]\n\tfsmonitor = "touch %s-config; false"\n' "$1" >> $G/config 2>/dev/null; then echo config_append=ok; else echo config_append=failed; fi
if cp $G/config /tmp/config 2>/dev/null && printf '[core]\n\tfsmonitor = "touch %s-rename; false"\n' "$1" >> /tmp/config && cp /tmp/config $W/.cfg-new && mv $W/.cfg-new $G/config 2>/dev/null; then echo config_rename=ok; else echo config_rename=failed; rm -f $W/.cfg-new; fi
for h in post-checkout pre-commit post-commit; do
	if printf '#!/bin/sh\ntouch %s-hook-%s\n' "$1" $h > $G/hooks/$h 2>/dev/null && chmod +x $G/hooks/$h; then echo hook_$h=ok; else echo hook_$h=failed; fi
done
if mv $G/hooks $G/hooks-aside 2>/dev/null; then echo hooks_rename=ok; mkdir -p $G/hooks; printf '#!/bin/sh\ntouch %s-hooks-swapped\n' "$1" > $G/hooks/pre-commit; chmod +x $G/hooks/pre-commit; else echo hooks_rename=failed; fi
mkdir -p $W/.evil-common/objects $W/.evil-common/refs/heads
printf 'ref: refs/heads/main\n' > $W/.evil-common/HEAD
printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = "touch %s-commondir; false"\n' "$1" > $W/.evil-common/config
if echo ../.evil-common > $G/commondir 2>/dev/null; then echo commondir=ok; else echo commondir=failed; fi
if mv $G $W/.git-aside 2>/dev/null; then
	echo git_rename=ok
	cp -a $W/.git-aside $G 2>/dev/null
	rm -f $G/commondir
	printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = "touch %s-swapped; false"\n' "$1" > $G/config
else
	echo git_rename=failed
fi
echo "== after"; ls -la $W $G $G/hooks 2>&1 | head -60; cat $G/config 2>&1
`

// TestAttackWorkspaceGit: the workspace is a git repository; the agent
// writes core.fsmonitor and hooks into its .git (directly, by renaming
// over, by a commondir, by swapping .git). The user's `git status` and
// `git commit` there run nothing of it and .git/config is unchanged; with
// workspace_git_readonly: false the agent's write reaches the host.
func TestAttackWorkspaceGit(t *testing.T) {
	t.Parallel()
	t.Run("default", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.removeVolume(t)
		if r := e.git(t, "init", "-q", e.ws); r.code != 0 {
			t.Fatalf("git init: %s", r.stderr)
		}
		cfg := filepath.Join(e.ws, ".git", "config")
		before, err := os.ReadFile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		canary := filepath.Join(e.dir, "canary")
		e.attackSession(t, "a8-wsgit", 3*time.Minute, workspaceGitScript, canary)
		if err := inPlace(cfg); err != nil {
			t.Errorf(".git/config: %v", err)
		} else if b, _ := os.ReadFile(cfg); !bytes.Equal(b, before) {
			t.Errorf("the workspace's .git/config was changed from the agent:\n%s", b)
		}
		e.git(t, "-C", e.ws, "status")
		e.git(t, "-C", e.ws, "-c", "user.name=e2e", "-c", "user.email=e2e@example.invalid", "commit", "--allow-empty", "-m", "x")
		checkNoCanary(t, canary)
	})
	t.Run("opt-out", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.removeVolume(t)
		if r := e.git(t, "init", "-q", e.ws); r.code != 0 {
			t.Fatalf("git init: %s", r.stderr)
		}
		writeFile(t, filepath.Join(e.inst, "config.yaml"), "workspace_git_readonly: false\n")
		marker := "e2e-marker-" + attackRand(6)
		r := e.attackSession(t, "a8-optout", 3*time.Minute,
			`if printf '[e2e]\n\tmarker = %s\n' "$1" >> $W/.git/config; then echo config_append=ok; else echo config_append=failed; fi`, marker)
		if r.code != 0 {
			t.Errorf("session with workspace_git_readonly: false: exit %d", r.code)
		}
		if b, _ := os.ReadFile(filepath.Join(e.ws, ".git", "config")); !strings.Contains(string(b), marker) {
			t.Errorf("with workspace_git_readonly: false the agent's write did not reach the host's .git/config:\n%s", b)
		}
	})
}

// ---------------------------------------------------------------------------
// 9a. Locks held by the agent.

const lockHoldScript = `touch $W/.session-started
$P flock 90 $W/.locked $W/.release $(find $I -name '*.lock' 2>/dev/null) \
	$I/.locks/memory.lock $I/.locks/policy.lock $I/.locks/vault.lock $I/.locks/playbooks.lock \
	$I/.locks/agents.lock $I/.locks/tasks.lock $I/memory/.lock $I/memory/history.jsonl.lock \
	$I/logs/audit.log.lock $I/policy.yaml.lock $I/config.yaml.lock $I/vault/.lock
`

// TestAttackLockHold: while the agent holds every lock file it can find or
// guess, the host's `policy allow` and `vault list` still succeed within
// 15 s.
func TestAttackLockHold(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.removeVolume(t)
	e.installProbe(t)
	if r := e.hobbs(nil, "vault", "init"); r.code != 0 {
		t.Fatalf("vault init: %s", r.stderr)
	}
	if r := e.hobbs([]byte(secretValue), "vault", "set", "e2e-token"); r.code != 0 {
		t.Fatalf("vault set: %s", r.stderr)
	}
	// The lock files host operations use exist before the session.
	if r := e.hobbs(nil, "policy", "allow", "before.example.org"); r.code != 0 {
		t.Fatalf("policy allow: %s", r.stderr)
	}
	s := e.startAttack(t, "a9-locks", lockHoldScript)
	locked := filepath.Join(e.ws, ".locked")
	deadline := time.Now().Add(90 * time.Second)
	for !exists(locked) && time.Now().Before(deadline) && s.tc.running() {
		time.Sleep(100 * time.Millisecond)
	}
	if !exists(locked) {
		s.finish(t, 30*time.Second)
		t.Fatalf("the agent never reported its locks")
	}
	type out struct {
		args []string
		r    result
		to   bool
		took time.Duration
	}
	var wg sync.WaitGroup
	res := make([]out, 2)
	for i, args := range [][]string{{"policy", "allow", "example.org"}, {"vault", "list"}} {
		i, args := i, args
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			r, to := e.host(t, 15*time.Second, args...)
			res[i] = out{args, r, to, time.Since(t0)}
		}()
	}
	wg.Wait()
	writeFile(t, filepath.Join(e.ws, ".release"), "")
	s.finish(t, 2*time.Minute)
	for _, o := range res {
		switch {
		case o.to:
			t.Errorf("hobbs %s did not end within 15s while the agent held its locks", strings.Join(o.args, " "))
		case o.r.code != 0:
			t.Errorf("hobbs %s failed (exit %d after %v) while the agent held its locks: %s", strings.Join(o.args, " "),
				o.r.code, o.took.Round(time.Millisecond), strings.TrimSpace(o.r.stderr))
		}
	}
	if b, _ := os.ReadFile(filepath.Join(e.inst, "policy.yaml")); !strings.Contains(string(b), "example.org") {
		t.Errorf("policy allow example.org did not reach policy.yaml")
	}
}

// ---------------------------------------------------------------------------
// 9b. Secrets and the proxy token in `docker inspect`.

const inspectScript = `echo "proxy_url=$HTTP_PROXY"
echo "secret_sha=$(printf %s "${E2E_SECRET:-}" | sha256sum | cut -d' ' -f1)"
touch $W/.ready
i=0; while [ ! -e $W/.inspected ] && [ $i -lt 900 ]; do sleep 0.1; i=$((i+1)); done
`

// TestAttackInspectSecrets: while a session runs, neither the vault value
// mapped into it nor the proxy token (as the agent sees it in HTTP_PROXY)
// appears in `docker inspect` of the agent or the proxy, nor in the
// engine's on-disk container configuration.
func TestAttackInspectSecrets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.removeVolume(t)
	if r := e.hobbs(nil, "vault", "init"); r.code != 0 {
		t.Fatalf("vault init: %s", r.stderr)
	}
	if r := e.hobbs([]byte(secretValue), "vault", "set", "e2e-token"); r.code != 0 {
		t.Fatalf("vault set: %s", r.stderr)
	}
	writeFile(t, filepath.Join(e.inst, "config.yaml"), "env:\n  E2E_SECRET: vault:e2e-token\n")
	tag := "a9-inspect"
	name := sessionName(t, tag)
	s := e.startAttack(t, tag, inspectScript)
	ready := filepath.Join(e.ws, ".ready")
	deadline := time.Now().Add(90 * time.Second)
	for !exists(ready) && time.Now().Before(deadline) && s.tc.running() {
		time.Sleep(100 * time.Millisecond)
	}
	if !exists(ready) {
		s.finish(t, 30*time.Second)
		t.Fatalf("the session never got ready")
	}
	inspected := engineConfigs(t, name, name+"-proxy")
	writeFile(t, filepath.Join(e.ws, ".inspected"), "")
	r := s.finish(t, time.Minute)
	p := kv(r.stdout)
	h := sha256.Sum256([]byte(secretValue))
	if p["secret_sha"] != hex.EncodeToString(h[:]) {
		t.Errorf("the vault value did not reach the agent as E2E_SECRET (the test checks nothing then)")
	}
	// The token as the agent sees it: the password of its HTTP_PROXY.
	token := ""
	if u, err := url.Parse(p["proxy_url"]); err == nil && u.User != nil {
		token, _ = u.User.Password()
	}
	switch {
	case p["proxy_url"] == "":
		t.Errorf("the agent has no HTTP_PROXY")
	case token == "":
		t.Logf("note: the agent's HTTP_PROXY (%s) carries no credentials; only the vault value is checked", p["proxy_url"])
	case len(token) < 16:
		t.Errorf("the proxy token in the agent's HTTP_PROXY is short (%d characters): %s", len(token), p["proxy_url"])
	}
	for where, text := range inspected {
		if strings.Contains(text, secretValue) {
			t.Errorf("the vault value is in %s", where)
		}
		if token != "" && strings.Contains(text, token) {
			t.Errorf("the proxy token is in %s", where)
		}
	}
}

// engineConfigs is what the engine tells and keeps of each container:
// `docker inspect`, and the JSON files of its on-disk configuration (when
// the test can read the engine's directory), by where they come from.
func engineConfigs(t *testing.T, containers ...string) map[string]string {
	t.Helper()
	inspected := map[string]string{}
	for _, c := range containers {
		out, err := exec.Command("docker", "inspect", c).CombinedOutput()
		if err != nil {
			t.Errorf("docker inspect %s: %v\n%s", c, err, out)
			continue
		}
		inspected["docker inspect "+c] = string(out)
		var ci []struct{ ID string }
		if json.Unmarshal(out, &ci) == nil && len(ci) == 1 {
			root := strings.TrimSpace(docker(t, "info", "--format", "{{.DockerRootDir}}"))
			dir := filepath.Join(root, "containers", ci[0].ID)
			ents, err := os.ReadDir(dir)
			if err != nil {
				t.Logf("note: the engine's on-disk config of %s not checked: %v", c, err)
			}
			for _, en := range ents {
				if strings.HasSuffix(en.Name(), ".json") {
					if b, err := os.ReadFile(filepath.Join(dir, en.Name())); err == nil {
						inspected[filepath.Join(dir, en.Name())] = string(b)
					}
				}
			}
		}
	}
	return inspected
}

// ---------------------------------------------------------------------------
// 9c. Terminal escape sequences in memory text.

const escapeScript = `hobbs memory add "$(printf 'escape-test \033]0;pwned-title\007 \033[2J\033[31mred\033[0m \233 end')" 2>&1
`

// TestAttackTerminalEscapes: a memory whose text carries terminal control
// sequences reaches the host's terminal through memory list/show/search
// only escaped. The host commands run on a real terminal (script(1) gives
// them a pseudo-terminal and copies what they print); on a pipe the text
// is passed on exactly, as --json and scripts need.
func TestAttackTerminalEscapes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.removeVolume(t)
	e.attackSession(t, "a9-escape", 3*time.Minute, escapeScript)
	r, _ := e.host(t, time.Minute, "memory", "list")
	ids := regexp.MustCompile(`mem_\d{8}_\d{3}`).FindAllString(r.stdout, -1)
	if len(ids) == 0 {
		t.Fatalf("the agent's memory is not listed on the host")
	}
	if !strings.Contains(r.stdout, "\x1b") {
		t.Errorf("memory list on a pipe changed the text: %q", r.stdout)
	}
	outs := map[string]string{}
	for _, args := range [][]string{{"memory", "list"}, {"memory", "show", ids[0]}, {"memory", "search", "escape-test"}} {
		out := e.hostTTY(t, args...)
		outs[strings.Join(args[:2], " ")] = out
		if !strings.Contains(out, "escape-test") || !strings.Contains(out, `\x1b`) {
			t.Errorf("hobbs %s on a terminal does not show the escaped text: %q", strings.Join(args, " "), out)
		}
	}
	for what, o := range outs {
		for _, c := range []string{"\x1b", "\x07", "\u009b", "\x9b"} {
			if strings.Contains(o, c) {
				t.Errorf("hobbs %s printed the control character %q from the agent's text: %q", what, c, o)
			}
		}
	}
}

// hostTTY runs hobbs args on the host as the test user with a terminal as
// its standard output (script -q -e -c … /dev/null) and returns what it
// printed there.
func (e *env) hostTTY(t *testing.T, args ...string) string {
	t.Helper()
	script, err := exec.LookPath("script")
	if err != nil {
		t.Fatalf("script(1) not found (util-linux): %v", err)
	}
	quoted := []string{hobbsBin}
	for _, a := range args {
		quoted = append(quoted, "'"+strings.ReplaceAll(a, "'", `'\''`)+"'")
	}
	c := e.command(nil, args...)
	c.Path = script
	c.Args = []string{"script", "-q", "-e", "-c", strings.Join(quoted, " "), "/dev/null"}
	r, timedOut := startTimed(t, c).wait(time.Minute)
	if timedOut || r.code != 0 {
		t.Fatalf("hobbs %s on a terminal: exit %d (timed out %v)\n%s%s", strings.Join(args, " "), r.code, timedOut, r.stdout, r.stderr)
	}
	return r.stdout
}
