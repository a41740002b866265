package egress

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/hobbs-agent/hobbs/src/policy"
)

// maxLeafCache bounds the leaf certificates kept.
const maxLeafCache = 256

// leafIssuer signs the certificates the proxy presents to the agent for
// intercepted hosts, one per host, cached.
type leafIssuer struct {
	ca   *x509.Certificate
	key  *ecdsa.PrivateKey
	leaf *ecdsa.PrivateKey // one key for every leaf of the session

	mu    sync.Mutex
	certs map[string]*tls.Certificate
}

func newLeafIssuer(certPEM, keyPEM string) (*leafIssuer, error) {
	cb, _ := pem.Decode([]byte(certPEM))
	kb, _ := pem.Decode([]byte(keyPEM))
	if cb == nil || kb == nil {
		return nil, errors.New("session CA: not PEM")
	}
	ca, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("session CA: %v", err)
	}
	k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("session CA key: %v", err)
	}
	key, ok := k.(*ecdsa.PrivateKey)
	if !ok || !key.PublicKey.Equal(ca.PublicKey) {
		return nil, errors.New("session CA key does not match its certificate")
	}
	leaf, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	return &leafIssuer{ca: ca, key: key, leaf: leaf, certs: map[string]*tls.Certificate{}}, nil
}

// certFor returns the certificate for host (canonical: a name or an IP).
func (li *leafIssuer) certFor(host string) (*tls.Certificate, error) {
	li.mu.Lock()
	defer li.mu.Unlock()
	if c, ok := li.certs[host]; ok {
		return c, nil
	}
	serial, err := policy.NewSerial()
	if err != nil {
		return nil, err
	}
	h := sha256.Sum256([]byte(host))
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: host},
		NotBefore:    li.ca.NotBefore,
		NotAfter:     li.ca.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		SubjectKeyId: h[:20],
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, li.ca, &li.leaf.PublicKey, li.key)
	if err != nil {
		return nil, err
	}
	c := &tls.Certificate{Certificate: [][]byte{der, li.ca.Raw}, PrivateKey: li.leaf}
	if len(li.certs) >= maxLeafCache { // a wildcard binding can name many hosts
		clear(li.certs)
	}
	li.certs[host] = c
	return c, nil
}
