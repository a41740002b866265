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
	"math/big"
	"net"
	"sync"
	"time"
)

// SessionCAValidity is how long a session CA (and every certificate it
// signs) is valid: a session longer than that must be restarted to reach
// intercepted hosts.
const SessionCAValidity = 30 * 24 * time.Hour

// NewSessionCA makes a session's certificate authority: an ECDSA P-256 key
// and a self-signed CA certificate, both PEM. The launcher makes one per
// session; the key goes to the proxy only (a file on the session's tmpfs),
// the certificate to the agent, whose tools then accept the certificates
// the proxy presents for intercepted hosts. MaxPathLen 0: it signs leaf
// certificates only.
func NewSessionCA(name string) (certPEM, keyPEM string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	serial, err := randSerial()
	if err != nil {
		return "", "", err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "Hobbs session CA " + name, Organization: []string{"Hobbs egress proxy"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(SessionCAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLen:            0,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return "", "", err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", "", err
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})), nil
}

func randSerial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

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
	serial, err := randSerial()
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
