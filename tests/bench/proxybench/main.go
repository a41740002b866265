// Command proxybench measures an HTTP CONNECT proxy against the direct path
// on loopback: new tunnels per second with latency percentiles, bulk
// throughput through tunnels, and the proxy's resident memory for idle
// tunnels. It also serves the benchmark's target. Used by tests/bench/proxy.sh.
//
//	proxybench target -listen 127.0.0.1:9000
//	proxybench tunnels -target localhost:9000 [-proxy 127.0.0.1:3128 -pid PID[,PID]] -c 16 -d 5s
//	proxybench bulk    -target localhost:9000 [-proxy ...] -c 16 -d 5s -size 64MiB
//	proxybench idle    -target localhost:9000 -proxy ... -pid PID[,PID] -n 500
//
// A proxy made of several processes (Hobbs's relay in front of its proxy)
// is measured by giving all their ids: CPU and memory are their sums.
//
// The target protocol is raw TCP: the client sends an 8-byte big-endian
// length, the target answers with that many bytes and closes.
package main

import (
	"bufio"
	"encoding/base64"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: proxybench target|tunnels|bulk|idle [flags]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:9000", "target: listen address")
	target := fs.String("target", "localhost:9000", "target address as the client names it")
	proxy := fs.String("proxy", "", "proxy address (empty: direct)")
	conc := fs.Int("c", 16, "concurrent clients")
	dur := fs.Duration("d", 5*time.Second, "duration")
	size := fs.Int64("size", 64<<20, "bulk: bytes per tunnel")
	pidList := fs.String("pid", "", "proxy process ids, comma-separated (CPU per tunnel; idle: RSS)")
	tpid := fs.Int("tpid", 0, "tunnels: target process id (its CPU per tunnel)")
	n := fs.Int("n", 500, "idle: tunnels to hold open")
	auth := fs.String("auth", "", "proxy credentials user:password (Basic Proxy-Authorization)")
	fs.Parse(os.Args[2:])
	var pid []int
	for _, f := range strings.Split(*pidList, ",") {
		if f == "" {
			continue
		}
		var p int
		if _, err := fmt.Sscan(f, &p); err != nil {
			fmt.Fprintln(os.Stderr, "bad -pid:", f)
			os.Exit(2)
		}
		pid = append(pid, p)
	}
	if *auth != "" {
		authHeader = "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(*auth)) + "\r\n"
	}
	switch os.Args[1] {
	case "target":
		serveTarget(*listen)
	case "tunnels":
		tunnels(*target, *proxy, *conc, *dur, pid, *tpid)
	case "bulk":
		bulk(*target, *proxy, *conc, *dur, *size)
	case "idle":
		idle(*target, *proxy, pid, *n)
	default:
		fmt.Fprintln(os.Stderr, "unknown mode", os.Args[1])
		os.Exit(2)
	}
}

var authHeader string

var zeros = make([]byte, 1<<20)

func serveTarget(addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			continue
		}
		go func(c net.Conn) {
			defer c.Close()
			var hdr [8]byte
			if _, err := io.ReadFull(c, hdr[:]); err != nil {
				return
			}
			left := int64(binary.BigEndian.Uint64(hdr[:]))
			for left > 0 {
				chunk := int64(len(zeros))
				if left < chunk {
					chunk = left
				}
				w, err := c.Write(zeros[:chunk])
				if err != nil {
					return
				}
				left -= int64(w)
			}
		}(c)
	}
}

// open returns a connection to target, through a CONNECT tunnel if proxy is set.
func open(target, proxy string) (net.Conn, error) {
	if proxy == "" {
		return net.Dial("tcp", target)
	}
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", target, target, authHeader)
	br := bufio.NewReaderSize(c, 512)
	line, err := br.ReadString('\n')
	if err != nil {
		c.Close()
		return nil, err
	}
	if !strings.Contains(line, " 200") {
		c.Close()
		return nil, fmt.Errorf("CONNECT: %s", strings.TrimSpace(line))
	}
	for {
		l, err := br.ReadString('\n')
		if err != nil {
			c.Close()
			return nil, err
		}
		if l == "\r\n" || l == "\n" {
			break
		}
	}
	if br.Buffered() > 0 {
		c.Close()
		return nil, fmt.Errorf("unexpected bytes after CONNECT answer")
	}
	return c, nil
}

func request(c net.Conn, size int64) (int64, error) {
	var hdr [8]byte
	binary.BigEndian.PutUint64(hdr[:], uint64(size))
	if _, err := c.Write(hdr[:]); err != nil {
		return 0, err
	}
	return io.Copy(io.Discard, c)
}

// cpuTicks is the user+system CPU time of pid in clock ticks (1/100 s).
func cpuTicks(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	var u, k int64
	fmt.Sscan(f[11], &u)
	fmt.Sscan(f[12], &k)
	return u + k
}

// selfCPU is this process's user+system CPU time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// sum adds f over pids (-1 when one is unreadable).
func sum(pids []int, f func(int) int64) int64 {
	var t int64
	for _, p := range pids {
		v := f(p)
		if v < 0 {
			return -1
		}
		t += v
	}
	return t
}

func tunnels(target, proxy string, conc int, dur time.Duration, pid []int, tpid int) {
	cpu0, tcpu0, self0 := sum(pid, cpuTicks), cpuTicks(tpid), selfCPU()
	var mu sync.Mutex
	var lat []time.Duration
	var errs atomic.Int64
	deadline := time.Now().Add(dur)
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < conc; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for time.Now().Before(deadline) {
				t0 := time.Now()
				c, err := open(target, proxy)
				if err != nil {
					errs.Add(1)
					continue
				}
				n, err := request(c, 64)
				c.Close()
				if err != nil || n != 64 {
					errs.Add(1)
					continue
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	el := time.Since(start)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000
	}
	cpu := ""
	if len(pid) > 0 && len(lat) > 0 {
		cpu = fmt.Sprintf(" cpu_us_per_tunnel=%.0f", float64(sum(pid, cpuTicks)-cpu0)*1e4/float64(len(lat)))
	}
	// The load's own cost: on a small machine the client and the target share
	// the cores with the proxy, so what they spend per tunnel bounds how far
	// any proxy's rate can move.
	if len(lat) > 0 {
		cpu += fmt.Sprintf(" client_cpu_us_per_tunnel=%.0f", float64((selfCPU()-self0).Microseconds())/float64(len(lat)))
		if tpid > 0 {
			cpu += fmt.Sprintf(" target_cpu_us_per_tunnel=%.0f", float64(cpuTicks(tpid)-tcpu0)*1e4/float64(len(lat)))
		}
	}
	fmt.Printf("tunnels_per_s=%.0f p50_ms=%.3f p99_ms=%.3f errors=%d%s\n", float64(len(lat))/el.Seconds(), pct(0.5), pct(0.99), errs.Load(), cpu)
}

func bulk(target, proxy string, conc int, dur time.Duration, size int64) {
	var total, errs atomic.Int64
	deadline := time.Now().Add(dur)
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < conc; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				c, err := open(target, proxy)
				if err != nil {
					errs.Add(1)
					continue
				}
				c.SetDeadline(deadline)
				n, _ := request(c, size)
				c.Close()
				total.Add(n)
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	fmt.Printf("bulk_MBps=%.0f errors=%d\n", float64(total.Load())/el.Seconds()/1e6, errs.Load())
}

func rssKB(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(l, "VmRSS:")), "%d", &kb)
			return kb
		}
	}
	return -1
}

func idle(target, proxy string, pid []int, n int) {
	before := sum(pid, rssKB)
	var conns []net.Conn
	for i := 0; i < n; i++ {
		c, err := open(target, proxy)
		if err != nil {
			fmt.Fprintln(os.Stderr, "idle:", err)
			break
		}
		conns = append(conns, c)
	}
	time.Sleep(2 * time.Second)
	after := sum(pid, rssKB)
	fmt.Printf("idle_tunnels=%d rss_before_MB=%.1f rss_after_MB=%.1f rss_delta_MB=%.1f\n", len(conns),
		float64(before)/1024, float64(after)/1024, float64(after-before)/1024)
	for _, c := range conns {
		c.Close()
	}
}
