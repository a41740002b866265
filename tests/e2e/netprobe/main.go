// Command netprobe is the end-to-end tests' network tool, baked into the test
// base image (busybox-static's wget and nc cannot resolve names: glibc's NSS
// does not work in a static binary). Pure Go, CGO_ENABLED=0.
//
//	netprobe get URL          GET through $HTTP_PROXY: "status=N body=…" or "error=…"
//	netprobe get-noauth URL   the same with the proxy's credentials stripped
//	netprobe direct URL       GET with no proxy at all
//	netprobe dial HOST:PORT   TCP connect: "connected" or "failed: …"
//	netprobe resolve NAME     DNS lookup: "resolved …" or "failed: …"
//	netprobe serve ADDR       HTTP server answering "upstream-ok", logging
//	                          one "request host=… path=…" line per request
//	netprobe req METHOD URL [HEADER: VALUE]
//	                          a request through $HTTP(S)_PROXY, trusting
//	                          $SSL_CERT_FILE: "status=N body=…" or "error=…"
//	netprobe fetch [-k] [-o FILE] [-H 'K: V']... [-d BODY] METHOD URL
//	                          a request through $HTTP(S)_PROXY, trusting
//	                          $SSL_CERT_FILE (-k: any certificate, as a
//	                          client inside an opaque tunnel may), no
//	                          redirects, no decompression: "status=N
//	                          ce=ENCODINGS raw=BASE64 OF THE BODY" or
//	                          "error=…"; -o also writes the body to FILE
//	netprobe tunnel HOST:PORT CONNECT through $HTTPS_PROXY (asking again while
//	                          it answers 403, for 15 s: a policy being
//	                          reloaded), send "held-bytes\n", print
//	                          "tunnel=open" and keep the tunnel until killed,
//	                          printing "tunnel-read=LINE" for each line the
//	                          target sends
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

func main() {
	if len(os.Args) >= 2 && os.Args[1] == "fetch" {
		fetch(os.Args[2:])
		return
	}
	if len(os.Args) == 4 && os.Args[1] == "held" {
		heldGet(os.Args[2], os.Args[3])
		return
	}
	if len(os.Args) >= 4 && os.Args[1] == "req" {
		request(os.Args[2], os.Args[3], os.Args[4:])
		return
	}
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: netprobe get|get-noauth|direct|dial|resolve|serve ARG")
		os.Exit(2)
	}
	arg := os.Args[2]
	switch os.Args[1] {
	case "get", "get-noauth", "direct":
		proxy := http.ProxyFromEnvironment
		if os.Args[1] == "direct" {
			proxy = nil
		}
		if os.Args[1] == "get-noauth" {
			proxy = func(r *http.Request) (*url.URL, error) {
				u, err := http.ProxyFromEnvironment(r)
				if u != nil {
					u.User = nil
				}
				return u, err
			}
		}
		c := &http.Client{Timeout: 8 * time.Second, Transport: &http.Transport{Proxy: proxy}}
		report(c.Get(arg))
	case "dial":
		c, err := net.DialTimeout("tcp", arg, 4*time.Second)
		if err != nil {
			fmt.Printf("failed: %s\n", oneLine(err.Error()))
			return
		}
		c.Close()
		fmt.Println("connected")
	case "resolve":
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
		defer cancel()
		ips, err := net.DefaultResolver.LookupHost(ctx, arg)
		if err != nil {
			fmt.Printf("failed: %s\n", oneLine(err.Error()))
			return
		}
		fmt.Printf("resolved %s\n", strings.Join(ips, " "))
	case "serve":
		http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
			fmt.Printf("request host=%s path=%s from=%s\n", r.Host, r.URL.Path, r.RemoteAddr)
			io.WriteString(w, "upstream-ok\n")
		})
		if err := http.ListenAndServe(arg, nil); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "tunnel":
		if err := holdTunnel(arg); err != nil {
			fmt.Printf("tunnel=failed %s\n", oneLine(err.Error()))
			os.Exit(1)
		}
		select {} // until killed, with the tunnel open
	default:
		fmt.Fprintln(os.Stderr, "netprobe: unknown command", os.Args[1])
		os.Exit(2)
	}
}

// request sends one request through the environment's proxy.
func request(method, u string, headers []string) {
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		fmt.Printf("error=%s\n", oneLine(err.Error()))
		return
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	c := &http.Client{Timeout: 8 * time.Second, Transport: &http.Transport{Proxy: http.ProxyFromEnvironment}}
	report(c.Do(req))
}

// fetch sends one request as the arguments say and prints the body it got
// back byte for byte (base64), with its Content-Encoding headers.
func fetch(args []string) {
	var hdrs []string
	var body, out string
	hasBody, insecure := false, false
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		switch args[0] {
		case "-k":
			insecure = true
			args = args[1:]
			continue
		}
		if len(args) < 2 {
			fmt.Println("error=usage")
			return
		}
		switch args[0] {
		case "-H":
			hdrs = append(hdrs, args[1])
		case "-d":
			body, hasBody = args[1], true
		case "-o":
			out = args[1]
		default:
			fmt.Println("error=unknown flag " + args[0])
			return
		}
		args = args[2:]
	}
	if len(args) != 2 {
		fmt.Println("error=usage: fetch [flags] METHOD URL")
		return
	}
	var rb io.Reader
	if hasBody {
		rb = strings.NewReader(body)
	}
	req, err := http.NewRequest(args[0], args[1], rb)
	if err != nil {
		fmt.Printf("error=%s\n", oneLine(err.Error()))
		return
	}
	for _, h := range hdrs {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	tr := &http.Transport{Proxy: http.ProxyFromEnvironment, DisableCompression: true}
	if insecure {
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
	}
	c := &http.Client{Timeout: 8 * time.Second, Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		fmt.Printf("error=%s\n", oneLine(err.Error()))
		return
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		fmt.Printf("error=%s\n", oneLine(err.Error()))
		return
	}
	if out != "" {
		os.WriteFile(out, b, 0o600)
	}
	fmt.Printf("status=%d ce=%s raw=%s\n", resp.StatusCode, strings.Join(resp.Header.Values("Content-Encoding"), ","),
		base64.StdEncoding.EncodeToString(b))
}

// report prints a response's status and the start of its body, or the
// error.
func report(resp *http.Response, err error) {
	if err != nil {
		fmt.Printf("error=%s\n", oneLine(err.Error()))
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	fmt.Printf("status=%d body=%s\n", resp.StatusCode, oneLine(string(b)))
}

// heldGet GETs u through the environment's proxy with time for the owner
// to answer a held request, and prints the answer prefixed by tag with the
// milliseconds it took.
func heldGet(tag, u string) {
	start := time.Now()
	c := &http.Client{Timeout: 120 * time.Second, Transport: &http.Transport{Proxy: http.ProxyFromEnvironment}}
	resp, err := c.Get(u)
	ms := time.Since(start).Milliseconds()
	if err != nil {
		fmt.Printf("%s ms=%d error=%s\n", tag, ms, oneLine(err.Error()))
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	fmt.Printf("%s ms=%d status=%d body=%s\n", tag, ms, resp.StatusCode, oneLine(string(b)))
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

var held net.Conn

// holdTunnel opens a CONNECT tunnel to target through $HTTPS_PROXY and sends
// a few bytes into it.
func holdTunnel(target string) error {
	pu, err := url.Parse(os.Getenv("HTTPS_PROXY"))
	if err != nil || pu.Host == "" {
		return fmt.Errorf("HTTPS_PROXY %q: %v", os.Getenv("HTTPS_PROXY"), err)
	}
	auth := ""
	if pu.User != nil {
		pw, _ := pu.User.Password()
		auth = "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(pu.User.Username()+":"+pw)) + "\r\n"
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", pu.Host, 4*time.Second)
		if err != nil {
			return err
		}
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", target, target, auth)
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
		if err != nil {
			c.Close()
			return err
		}
		if resp.StatusCode == http.StatusOK {
			if _, err := io.WriteString(c, "held-bytes\n"); err != nil {
				return err
			}
			fmt.Println("tunnel=open")
			held = c // kept reachable: a collected conn would be closed
			go func() {
				for {
					l, err := br.ReadString('\n')
					if err != nil {
						return
					}
					fmt.Printf("tunnel-read=%s", l)
				}
			}()
			return nil
		}
		c.Close()
		if resp.StatusCode != http.StatusForbidden || time.Now().After(deadline) {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
