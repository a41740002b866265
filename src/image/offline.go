package image

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/hobbs-agent/hobbs/src/errs"
)

// onlineHosts are the hosts dist/Dockerfile.runtime downloads from, with
// the ports it uses.
var onlineHosts = []string{"registry-1.docker.io:443", "deb.debian.org:80", "registry.npmjs.org:443"}

// onlineTimeout bounds the check of each host.
const onlineTimeout = 3 * time.Second

// checkOnline fails at once, advising Offline, when this machine
// cannot open a connection to the hosts the runtime base is built from:
// the build would otherwise fail later with the registry's or apt's raw
// error. It checks only a local engine reached without a proxy: a remote
// engine, or one whose downloads go through a proxy, has a network this
// process cannot test.
func checkOnline(ctx context.Context) error {
	if !networkTestable() {
		return nil
	}
	errc := make(chan error, len(onlineHosts))
	for _, h := range onlineHosts {
		go func() {
			d := net.Dialer{Timeout: onlineTimeout}
			c, err := d.DialContext(ctx, "tcp", h)
			if err == nil {
				c.Close()
			}
			errc <- err
		}()
	}
	for range onlineHosts {
		if err := <-errc; err != nil {
			if ctx.Err() != nil {
				return &errs.Error{Code: errs.Interrupted, Msg: "hobbs build --runtime: interrupted"}
			}
			return errs.Failf("no internet for the runtime base: %v", err).Advise(Offline)
		}
	}
	return nil
}

// networkTestable reports whether this process's network is the engine's:
// a local engine reached without a proxy. A remote engine, or one whose
// downloads go through a proxy, has a network this process cannot test.
func networkTestable() bool {
	if os.Getenv("DOCKER_HOST") != "" && !strings.HasPrefix(os.Getenv("DOCKER_HOST"), "unix://") {
		return false
	}
	for _, v := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"} {
		if os.Getenv(v) != "" {
			return false
		}
	}
	return true
}

// registryTimeout bounds checkRegistry: a registry that has not answered
// by then is taken as unreachable.
var registryTimeout = 2 * time.Second

// checkRegistry fails when the registry at host (host[:port], 443 by
// default) does not answer within registryTimeout: its address does not
// resolve, nothing listens, or it accepts and stays silent. Any answer
// counts, an HTTP error or plain HTTP on the TLS port included (the engine
// speaks plain HTTP to a registry on loopback): the pull then says what is
// wrong. It sends a bare TLS handshake and GET /v2/, no credentials, so
// the server's certificate is not checked here (the engine checks it). It
// checks nothing when networkTestable is false.
func checkRegistry(ctx context.Context, host string) error {
	if !networkTestable() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, registryTimeout)
	defer cancel()
	tr := &http.Transport{Proxy: nil, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+host+"/v2/", nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err == nil {
		resp.Body.Close()
		return nil
	}
	var op *net.OpError
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &op) && op.Op == "dial") {
		if errors.Is(err, context.DeadlineExceeded) {
			return errors.New("no answer within " + registryTimeout.String())
		}
		return op
	}
	return nil
}
