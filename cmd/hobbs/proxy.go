package main

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/egress"
	"github.com/hobbs-agent/hobbs/src/errs"
)

// imagePolicy is where the image carries the default policy.
const imagePolicy = "/etc/hobbs/policy.yaml"

func newProxyCmd(a *app) *cobra.Command {
	var (
		listen, auditPath, tokenFile, tokenEnv string
		secretsFile, upstreamCA                string
		policies                               []string
		idle, grace                            time.Duration
	)
	cmd := &cobra.Command{
		Use:   "proxy",
		Short: "Run the egress proxy (allowlist, deny by default)",
		Long: `proxy runs the egress proxy the agent's container talks through. It allows
only what the policy files list (merged in order: the image's default, then
the instance's policy.yaml) and denies everything else, on CONNECT tunnels
and on plain-HTTP forwarding alike. It resolves names itself and refuses
private, loopback and link-local addresses unless allow_private opens them.

The policy files are watched and reloaded when they change; an invalid edit
keeps the last good policy. Every decision is one JSON line in --audit.
With --auth-token-file (or --auth-token-env, which names a variable holding
it), clients must authenticate as user "hobbs" with the token as password
(HTTP_PROXY=http://hobbs:TOKEN@proxy:3128).

With --secrets-file (hobbs run writes it on the session's tmpfs: the session
CA with its key and the secrets config.yaml binds to hosts), the proxy puts
each secret in place of its placeholder in requests to its hosts only,
refuses requests that carry one anywhere else, and intercepts HTTPS to those
hosts and to hosts with request rules (docs/egress.md).

Without --policy, ` + imagePolicy + ` is used. SIGTERM drains open
requests and tunnels (up to --grace) and exits 0.`,
		Example: `  hobbs proxy --policy /etc/hobbs/policy.yaml --policy ~/.hobbs/policy.yaml \
      --audit ~/.hobbs/logs/egress/audit.log --auth-token-file /run/secrets/proxy-token
  hobbs proxy --listen 127.0.0.1:3128 --policy policy.yaml
  hobbs proxy --listen unix:/run/hobbs/proxy.sock --policy policy.yaml
  HOBBS_PROXY_TOKEN=s3cret hobbs proxy --policy policy.yaml --auth-token-env HOBBS_PROXY_TOKEN
  HTTPS_PROXY=http://127.0.0.1:3128 curl https://api.github.com/zen`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(policies) == 0 {
				if _, err := os.Stat(imagePolicy); err != nil {
					return errs.Usagef("no --policy given and %s does not exist", imagePolicy).
						WithHint("pass --policy FILE (see 'hobbs policy show' for the format)")
				}
				policies = []string{imagePolicy}
			}
			for _, p := range policies {
				if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
					return errs.Missingf("policy file %s does not exist", p)
				}
			}
			token, err := proxyToken(tokenFile, tokenEnv)
			if err != nil {
				return err
			}
			logf := func(format string, args ...any) {
				fmt.Fprintf(a.errOut, "hobbs proxy: %s\n", audit.Redact(fmt.Sprintf(format, args...)))
			}
			opts := egress.Options{
				PolicyFiles: policies, AuthToken: token, AuditPath: auditPath, Logf: logf, IdleTimeout: idle,
			}
			if secretsFile != "" {
				if opts.Secrets, err = egress.LoadSessionSecrets(secretsFile); err != nil {
					return errs.Wrap(errs.Usage, err, "secrets file")
				}
			}
			if upstreamCA != "" {
				if opts.UpstreamRoots, err = rootsWith(upstreamCA); err != nil {
					return errs.Wrap(errs.Usage, err, "--upstream-ca")
				}
			}
			srv, err := egress.NewServer(opts)
			if err != nil {
				return err
			}
			ln, err := egress.Listen(listen)
			if err != nil {
				return errs.Wrap(errs.Failure, err, "listen on %s", listen)
			}
			ctx := cmd.Context()
			if err := srv.Watch(ctx); err != nil {
				logf("cannot watch the policy files (no hot reload): %v", err)
			}
			auth := "off"
			if token != "" {
				auth = "on"
			}
			auditTo := auditPath
			if auditTo == "" {
				auditTo = "off"
			}
			bound := 0
			if opts.Secrets != nil {
				bound = len(opts.Secrets.Secrets)
			}
			logf("listening on %s; policy %s (%s); auth %s; audit %s; bound secrets %d",
				ln.Addr(), strings.Join(policies, ", "), srv.Policy().Summary(), auth, auditTo, bound)
			served := make(chan error, 1)
			go func() { served <- srv.Serve(ln) }()
			select {
			case err := <-served:
				srv.Shutdown(context.Background())
				return errs.Wrap(errs.Failure, err, "proxy stopped")
			case <-ctx.Done():
			}
			logf("shutting down: draining %d tunnels (up to %v)", srv.ActiveTunnels(), grace)
			sctx, cancel := context.WithTimeout(context.Background(), grace)
			defer cancel()
			srv.Shutdown(sctx)
			<-served
			logf("stopped")
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "0.0.0.0:3128", "address to listen on: HOST:PORT or unix:PATH")
	f.StringArrayVar(&policies, "policy", nil, "policy file, repeatable; merged in order (default "+imagePolicy+")")
	f.StringVar(&auditPath, "audit", "", "append one JSON line per decision to this file")
	f.StringVar(&tokenFile, "auth-token-file", "", "file holding the proxy token; clients must send it (user hobbs)")
	f.StringVar(&tokenEnv, "auth-token-env", "", "environment variable holding the proxy token (removed from the environment once read)")
	cmd.MarkFlagsMutuallyExclusive("auth-token-file", "auth-token-env")
	f.StringVar(&secretsFile, "secrets-file", "", "the session's CA and bound secrets (JSON; hobbs run writes it)")
	f.StringVar(&upstreamCA, "upstream-ca", "", "PEM roots to trust, besides the system's, for intercepted hosts (tests)")
	f.DurationVar(&idle, "idle-timeout", 10*time.Minute, "close a tunnel after this long without traffic")
	f.DurationVar(&grace, "grace", 10*time.Second, "on SIGTERM, wait this long for open tunnels")
	cmd.AddCommand(newProxyHealthCmd(a), newProxyRelayCmd(a))
	return cmd
}

func newProxyRelayCmd(a *app) *cobra.Command {
	var listen, to string
	var detach bool
	var listenFD int
	cmd := &cobra.Command{
		Use:   "relay",
		Short: "Forward a local TCP address to the proxy's unix socket",
		Long: `relay listens on --listen and forwards every connection, byte for byte, to
the proxy at --to. In a hobbs run session the agent's container has no
network but loopback: the proxy listens on a unix socket shared with it, and
the image's entry point starts this relay so that programs find the proxy
at the TCP address in HTTP_PROXY. The relay checks nothing itself: the
token, the policy and the address guard are the proxy's. A connection that
comes while the proxy is still starting is held until it answers (30 s at
most). It runs until SIGTERM or SIGINT; with --detach it runs in the
background (output discarded) and the command prints its pid and returns
once it listens.`,
		Example: `  hobbs proxy relay --listen 127.0.0.1:3128 --to unix:/run/hobbs/proxy.sock
  hobbs proxy relay --detach   # the entry point's way: returns once listening`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			var ln net.Listener
			var err error
			if listenFD > 0 { // started by --detach: the listener is inherited
				ln, err = net.FileListener(os.NewFile(uintptr(listenFD), "relay"))
			} else {
				ln, err = net.Listen("tcp", listen)
			}
			if err != nil {
				return errs.Wrap(errs.Failure, err, "listen on %s", listen)
			}
			if detach {
				pid, err := detachRelay(ln, listen, to)
				if err == nil {
					fmt.Fprintln(a.out, pid)
				}
				return err
			}
			logf := func(format string, args ...any) {
				fmt.Fprintf(a.errOut, "hobbs proxy relay: %s\n", fmt.Sprintf(format, args...))
			}
			logf("relaying %s to %s", ln.Addr(), to)
			return (&egress.Relay{To: to, Logf: logf}).Serve(cmd.Context(), ln)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:3128", "local HOST:PORT to listen on")
	cmd.Flags().StringVar(&to, "to", "unix:/run/hobbs/proxy.sock", "the proxy: unix:PATH or HOST:PORT")
	cmd.Flags().BoolVar(&detach, "detach", false, "run in the background; return once listening")
	cmd.Flags().IntVar(&listenFD, "listen-fd", 0, "serve the listener inherited as this file descriptor (--detach uses it)")
	_ = cmd.Flags().MarkHidden("listen-fd")
	return cmd
}

// detachRelay starts the relay in the background on ln, which is already
// listening (so a client right after this returns is not refused), and
// returns its pid.
func detachRelay(ln net.Listener, listen, to string) (int, error) {
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		return 0, errs.Wrap(errs.Failure, err, "relay listener")
	}
	self, err := os.Executable()
	if err != nil {
		return 0, errs.Wrap(errs.Failure, err, "relay")
	}
	c := exec.Command(self, "proxy", "relay", "--listen", listen, "--to", to, "--listen-fd", "3")
	c.ExtraFiles = []*os.File{f} // fd 3
	if err := c.Start(); err != nil {
		return 0, errs.Wrap(errs.Failure, err, "start the relay")
	}
	pid := c.Process.Pid
	return pid, c.Process.Release()
}

func newProxyHealthCmd(a *app) *cobra.Command {
	var addr string
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Exit 0 if the proxy at --addr answers its health check, 1 otherwise",
		Long: `health asks the proxy listening at --addr for ` + egress.HealthPath + ` (a plain, non-proxy
request that needs no token). It is the proxy container's health check.
With --wait it asks again every 10ms until the proxy answers or the time is
up: the agent container's entry point waits for its proxy this way.`,
		Example: `  hobbs proxy health
  hobbs proxy health --addr proxy:3128
  hobbs proxy health --addr unix:/run/hobbs/proxy.sock
  hobbs proxy health --addr 127.0.0.1:3128 --wait 30s`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			deadline := time.Now().Add(wait)
			for {
				err := proxyHealth(addr, min(3*time.Second, max(time.Until(deadline), 100*time.Millisecond)))
				if err == nil {
					a.status("proxy at %s is healthy", addr)
					return nil
				}
				if time.Now().After(deadline) {
					return err
				}
				select {
				case <-cmd.Context().Done():
					return err
				case <-time.After(10 * time.Millisecond):
				}
			}
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:3128", "the proxy: HOST:PORT or unix:PATH")
	cmd.Flags().DurationVar(&wait, "wait", 0, "keep asking until the proxy answers or this much time has passed")
	return cmd
}

// proxyHealth asks the proxy at addr for its health path once.
func proxyHealth(addr string, timeout time.Duration) error {
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) { return egress.DialAddr(ctx, addr) }
	client := &http.Client{Timeout: timeout, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true, DialContext: dial}}
	host := addr
	if strings.HasPrefix(addr, "unix:") {
		host = "proxy"
	}
	resp, err := client.Get("http://" + host + egress.HealthPath)
	if err != nil {
		return errs.Failf("proxy at %s is not answering: %v", addr, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errs.Failf("proxy at %s answered %s", addr, resp.Status)
	}
	return nil
}

// proxyToken reads the token from --auth-token-file or --auth-token-env
// ("" when neither is given). The variable is removed once read, so nothing
// the proxy starts inherits it.
func proxyToken(file, env string) (string, error) {
	var token, from string
	switch {
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return "", errs.Wrap(errs.Missing, err, "read --auth-token-file")
		}
		token, from = strings.TrimSpace(string(b)), file
	case env != "":
		v, ok := os.LookupEnv(env)
		if !ok {
			return "", errs.Missingf("--auth-token-env: %s is not set", env)
		}
		os.Unsetenv(env)
		token, from = strings.TrimSpace(v), "$"+env
	default:
		return "", nil
	}
	if token == "" || strings.ContainsAny(token, ":\r\n") {
		return "", errs.Usagef("%s: the token must be one non-empty line without ':'", from)
	}
	return token, nil
}

// rootsWith is the system's roots plus the certificates in the PEM file.
func rootsWith(file string) (*x509.CertPool, error) {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s: no PEM certificate", file)
	}
	return pool, nil
}
