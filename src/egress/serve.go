package egress

// What hobbs proxy and its subcommands run: the proxy from its settings
// (policy files, token, secrets, roots) until the context ends, and the
// health check the images use to wait for it.

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/policy"
	"github.com/hobbs-agent/hobbs/src/userscope"
)

// ImagePolicy is where the image carries the default policy.
const ImagePolicy = "/etc/hobbs/policy.yaml"

// ProxyConfig is what hobbs proxy's flags say.
type ProxyConfig struct {
	Listen      string   // HOST:PORT or unix:PATH
	Policies    []string // default: ImagePolicy
	AuditPath   string
	Session     string // named in each audit line
	TokenFile   string // the proxy token's file, or
	TokenEnv    string // the variable holding it (removed once read)
	SecretsFile string // the session's CA and bound secrets
	UpstreamCA  string // PEM roots to trust besides the system's
	Idle, Grace time.Duration
	Logf        func(format string, args ...any)
	Hold        HoldOptions // held requests (hold.go)
	// StateDir is the Claude Code state volume, mounted read-only; at
	// SIGTERM, once drained, the proxy lists it into StateListing
	// (userscope.ListTo) when StateListing+StateAskSuffix exists: the
	// launcher writes that file once the agent is gone, before it stops
	// the proxy, so that the listing is of what the agent left.
	StateDir, StateListing string
}

// StateAskSuffix ends the name of the file that asks the proxy to list
// the state volume at its stop (ProxyConfig.StateListing).
const StateAskSuffix = ".ask"

// stateListTime is how long the listing may take: hobbs run gives the
// proxy's stop 5 s (proxyStopTime), the drain before it ends at once once
// the agent is gone, and a listing cut short by the engine's kill would
// leave the end nothing to read either way.
const stateListTime = 2 * time.Second

// stateTop is the name the engine's cp gives the state directory
// (HOME/.claude) in its stream: the proxy's listing names it the same.
const stateTop = ".claude"

// listState lists the state volume when the launcher asked for it.
func (c *ProxyConfig) listState(logf func(string, ...any)) {
	if c.StateDir == "" || c.StateListing == "" {
		return
	}
	if _, err := os.Lstat(c.StateListing + StateAskSuffix); err != nil {
		return
	}
	if err := userscope.ListTo(c.StateDir, stateTop, c.StateListing, c.Session, time.Now().Add(stateListTime)); err != nil {
		// The agent's names reach the log quoted.
		logf("the state volume was not listed: %q", err.Error())
	}
}

// options checks c and turns it into the server's options.
func (c *ProxyConfig) options() (Options, error) {
	if len(c.Policies) == 0 {
		if _, err := os.Stat(ImagePolicy); err != nil {
			return Options{}, errs.Usagef("no --policy given and %s does not exist", ImagePolicy).
				Advise(NoImagePolicy)
		}
		c.Policies = []string{ImagePolicy}
	}
	for _, p := range c.Policies {
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			return Options{}, errs.Missingf("policy file %s does not exist", p)
		}
	}
	token, err := ReadToken(c.TokenFile, c.TokenEnv)
	if err != nil {
		return Options{}, err
	}
	opts := Options{PolicyFiles: c.Policies, AuthToken: token, AuditPath: c.AuditPath, Session: c.Session, Logf: c.Logf, IdleTimeout: c.Idle, Hold: c.Hold}
	if c.SecretsFile != "" {
		if opts.Secrets, err = policy.LoadSessionSecrets(c.SecretsFile); err != nil {
			return opts, errs.Wrap(errs.Usage, err, "secrets file")
		}
	}
	if c.UpstreamCA != "" {
		if opts.UpstreamRoots, err = rootsWith(c.UpstreamCA); err != nil {
			return opts, errs.Wrap(errs.Usage, err, "--upstream-ca")
		}
	}
	return opts, nil
}

// RunProxy serves the proxy c describes until ctx ends, then drains open
// requests and tunnels for up to c.Grace. It says on c.Logf where it
// listens and with what, and when it stops.
func RunProxy(ctx context.Context, c ProxyConfig) error {
	logf := func(format string, args ...any) {
		if c.Logf != nil {
			c.Logf(format, args...)
		}
	}
	opts, err := c.options()
	if err != nil {
		return err
	}
	srv, err := NewServer(opts)
	if err != nil {
		return err
	}
	ln, err := Listen(c.Listen)
	if err != nil {
		return errs.Wrap(errs.Failure, err, "listen on %s", c.Listen)
	}
	if err := srv.Watch(ctx); err != nil {
		logf("cannot watch the policy files (no hot reload): %v", err)
	}
	auth := "off"
	if opts.AuthToken != "" {
		auth = "on"
	}
	auditTo := c.AuditPath
	if auditTo == "" {
		auditTo = "off"
	}
	bound := 0
	if opts.Secrets != nil {
		bound = len(opts.Secrets.Secrets)
	}
	logf("listening on %s; policy %s (%s); auth %s; audit %s; bound secrets %d",
		ln.Addr(), strings.Join(c.Policies, ", "), srv.Policy().Summary(), auth, auditTo, bound)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		srv.Shutdown(context.Background())
		return errs.Wrap(errs.Failure, err, "proxy stopped")
	case <-ctx.Done():
	}
	logf("shutting down: draining %d tunnels (up to %v)", srv.ActiveTunnels(), c.Grace)
	sctx, cancel := context.WithTimeout(context.Background(), c.Grace)
	defer cancel()
	srv.Shutdown(sctx)
	<-served
	c.listState(logf)
	logf("stopped")
	return nil
}

// ReadToken reads the proxy token from file or from the variable env (""
// when neither is given). The variable is removed once read, so nothing
// the proxy starts inherits it.
func ReadToken(file, env string) (string, error) {
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

// WaitHealthy asks the proxy at addr for HealthPath until it answers, ctx
// ends or wait has passed (at least once), every 10ms.
func WaitHealthy(ctx context.Context, addr string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	var answered error // the last refusal the proxy itself gave, if any
	for {
		// Each attempt gets at least a second: on a loaded machine a shorter
		// timeout reports a live proxy as not answering.
		got, err := health(addr, min(3*time.Second, max(time.Until(deadline), time.Second)))
		if got && err != nil {
			answered = err
		}
		if err == nil || time.Now().After(deadline) {
			if err != nil && answered != nil {
				return answered
			}
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Health asks the proxy at addr (HOST:PORT or unix:PATH) for its health
// path once: a plain, non-proxy request that needs no token.
func Health(addr string, timeout time.Duration) error {
	_, err := health(addr, timeout)
	return err
}

// health is Health, also saying whether the proxy answered at all (an
// answer other than 200 is still an answer).
func health(addr string, timeout time.Duration) (answered bool, err error) {
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) { return DialAddr(ctx, addr) }
	client := &http.Client{Timeout: timeout, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true, DialContext: dial}}
	host := addr
	if strings.HasPrefix(addr, "unix:") {
		host = "proxy"
	}
	resp, err := client.Get("http://" + host + HealthPath)
	if err != nil {
		return false, errs.Failf("proxy at %s is not answering: %v", addr, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return true, errs.Failf("proxy at %s answered %s", addr, resp.Status)
	}
	return true, nil
}
