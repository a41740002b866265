package mail

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"time"
)

// ErrUntrusted is a server whose certificate does not verify against the
// trusted roots (the system's, or the trigger's tls_ca): nothing is sent
// to it, and there is no fallback to a connection without TLS.
var ErrUntrusted = errors.New("the server's certificate is not trusted")

// ErrNoStartTLS is a server that does not offer STARTTLS where it was
// asked for: nothing is sent to it in the clear.
var ErrNoStartTLS = errors.New("the server does not offer STARTTLS")

// tlsError marks err ErrUntrusted when it is a certificate that did not
// verify.
func tlsError(err error) error {
	var cv *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	var ci x509.CertificateInvalidError
	if errors.As(err, &cv) || errors.As(err, &ua) || errors.As(err, &he) || errors.As(err, &ci) {
		return fmt.Errorf("%w: %v", ErrUntrusted, err)
	}
	return err
}

// Roots is the pool of the PEM certificates in pem (a trigger's tls_ca):
// the only roots trusted for its servers.
func Roots(pem []byte) (*x509.CertPool, error) {
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(pem) {
		return nil, errors.New("no PEM certificate in it")
	}
	return p, nil
}

// TLSConfig is the client configuration for host: roots (nil: the
// system's), at least TLS 1.2.
func TLSConfig(host string, roots *x509.CertPool) *tls.Config {
	return &tls.Config{ServerName: host, RootCAs: roots, MinVersion: tls.VersionTLS12}
}

// dnsTimeout bounds one DKIM key look-up.
const dnsTimeout = 10 * time.Second

// Resolver is a Rules.LookupTXT that asks the DNS server at addr
// (HOST:PORT) alone, over UDP, and TCP where an answer is truncated.
func Resolver(addr string) func(name string) ([]string, error) {
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
	return func(name string) ([]string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), dnsTimeout)
		defer cancel()
		return r.LookupTXT(ctx, name)
	}
}
