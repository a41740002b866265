package policy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"strings"
	"time"
)

// A session's secrets: what the launcher hands the proxy, in a file on the
// session's tmpfs (never an argument or the environment), and the session
// CA the proxy intercepts bound hosts with. The file is private between the
// launcher, which writes it (json.Marshal of SessionSecrets), and the
// proxy, which reads it (LoadSessionSecrets).

// Secret is a bound secret as a session's proxy holds it: its Binding,
// the placeholder the agent holds and the vault's value. The proxy puts
// Value in place of Placeholder in requests to the binding's hosts only,
// in the positions it names, and refuses a request that carries
// Placeholder anywhere else (or, where the proxy sees plaintext, Value to
// any other host).
type Secret struct {
	Binding
	// Part is, for a binding of KindAWSSigV4, which of its two values
	// this is (PartAWSKeyID, PartAWSSecretKey); empty otherwise.
	Part        string `json:"part,omitempty"`
	Placeholder string `json:"placeholder"` // what the agent holds
	Value       string `json:"value"`       // the vault's value

	match Matcher
}

// The parts of an aws-sigv4 binding: the launcher makes a Secret of each.
const (
	// PartAWSKeyID is the access key id: in the Credential of requests the
	// proxy signs again, and like any header-bound secret elsewhere.
	PartAWSKeyID = "key-id"
	// PartAWSSecretKey is the secret access key: never in a request.
	PartAWSSecretKey = "secret-key"
)

// Matcher is the secret's compiled binding (LoadSessionSecrets fills it;
// the secret access key of an aws-sigv4 binding goes in no position).
func (s *Secret) Matcher() Matcher { return s.match }

// SessionSecrets is the session's secrets file: the session CA
// (certificate and key, PEM) and the bound secrets.
type SessionSecrets struct {
	CACert  string    `json:"ca_cert"`
	CAKey   string    `json:"ca_key"`
	Secrets []*Secret `json:"secrets"`

	matchers []Matcher // the secrets' compiled bindings (Prepare)
}

// MinValueScan is the shortest secret value the proxy looks for in
// plaintext requests to other hosts: a shorter one would match ordinary
// text.
const MinValueScan = 8

// LoadSessionSecrets reads the launcher's secrets file and checks it.
func LoadSessionSecrets(path string) (*SessionSecrets, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	defer clear(data)
	var ss SessionSecrets
	if err := json.Unmarshal(data, &ss); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if err := ss.Prepare(); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return &ss, nil
}

// Prepare compiles every secret's binding and checks the names, kinds and
// placeholders.
func (ss *SessionSecrets) Prepare() error {
	seen, names := map[string]bool{}, map[string]bool{}
	ss.matchers = nil
	for _, s := range ss.Secrets {
		m, err := s.Binding.Compile()
		if err != nil {
			return fmt.Errorf("secret %s: %v", s.Name, err)
		}
		switch {
		case s.Kind == "" && s.Part == "", s.Kind == KindAWSSigV4 && s.Part == PartAWSKeyID:
		case s.Kind == KindAWSSigV4 && s.Part == PartAWSSecretKey:
			m.Place.in = 0 // signs; never sent
		default:
			return fmt.Errorf("secret %s: unknown kind %q (part %q)", s.Name, s.Kind, s.Part)
		}
		if len(s.Placeholder) < 16 || seen[s.Placeholder] || s.Value == "" || strings.Contains(s.Value, s.Placeholder) {
			return fmt.Errorf("secret %s: bad placeholder", s.Name)
		}
		if names[s.Name] {
			return fmt.Errorf("secret %s: named twice", s.Name)
		}
		seen[s.Placeholder], names[s.Name] = true, true
		s.match = m
		ss.matchers = append(ss.matchers, m)
	}
	var parts []string
	for _, s := range ss.Secrets {
		if s.Part != "" {
			parts = append(parts, s.Part)
		}
	}
	if len(parts) != 0 && (len(parts) != 2 || parts[0] == parts[1]) {
		return errors.New("an aws-sigv4 binding is one access key id and one secret key")
	}
	return nil
}

// Matchers are the secrets' compiled bindings (Prepare makes them), for
// Explain; nil for no secrets file.
func (ss *SessionSecrets) Matchers() []Matcher {
	if ss == nil {
		return nil
	}
	return ss.matchers
}

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
	serial, err := NewSerial()
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

// NewSerial is a random certificate serial number (127 bits).
func NewSerial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}
