package launcher

import (
	"context"
	"net"
	"os"
	"strings"
	"time"

	"github.com/hobbs-agent/hobbs/src/errs"
)

// offlineHint is the hint of a runtime base build that failed: it needs the
// internet, and docs/setup.md says how to get a base without it.
const offlineHint = "building the runtime base needs the internet (Debian's image and packages, npm); offline, load a base image saved elsewhere (docker save / docker load) or point base_image in config.yaml at a local image with Node.js and Claude Code: see docs/setup.md, \"A runtime base without the internet\""

// onlineHosts are the hosts dist/Dockerfile.runtime downloads from, with
// the ports it uses.
var onlineHosts = []string{"registry-1.docker.io:443", "deb.debian.org:80", "registry.npmjs.org:443"}

// onlineTimeout bounds the check of each host.
const onlineTimeout = 3 * time.Second

// checkOnline fails at once, with the offline hint, when this machine
// cannot open a connection to the hosts the runtime base is built from:
// the build would otherwise fail later with the registry's or apt's raw
// error. It checks only a local engine reached without a proxy: a remote
// engine, or one whose downloads go through a proxy, has a network this
// process cannot test.
func checkOnline(ctx context.Context) error {
	if os.Getenv("DOCKER_HOST") != "" && !strings.HasPrefix(os.Getenv("DOCKER_HOST"), "unix://") {
		return nil
	}
	for _, v := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"} {
		if os.Getenv(v) != "" {
			return nil
		}
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
			return errs.Failf("no internet for the runtime base: %v", err).WithHint("%s", offlineHint)
		}
	}
	return nil
}
