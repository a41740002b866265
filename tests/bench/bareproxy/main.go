// Command bareproxy is goproxy with its defaults (accept everything), the
// "bare goproxy" anchor of the proxy benchmark. Not part of Hobbs.
package main

import (
	"flag"
	"log"
	"net/http"

	"github.com/elazarl/goproxy"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:3129", "listen address")
	flag.Parse()
	p := goproxy.NewProxyHttpServer()
	p.Tr.Proxy = nil
	p.ConnectDial = nil
	log.Fatal(http.ListenAndServe(*listen, p))
}
