package egress

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/hobbs-agent/hobbs/src/policy"
)

// AWS Signature Version 4. An AWS secret access key is never sent: a
// client signs each request with it (an HMAC over the method, path,
// query, headers and the body's SHA-256), so a placeholder in its place
// cannot be substituted. For a binding of kind aws-sigv4 the agent holds
// placeholders of the access key id and of the secret key and signs with
// them; the proxy checks that a SigV4 request to a bound host names the
// placeholder key id, hashes the body itself (a request whose body hash it
// cannot check — UNSIGNED-PAYLOAD, a streaming signature, a body over
// maxSignBody — is refused), and signs the request again with the real
// keys (aws-sdk-go-v2's signer), for the region and service the agent
// signed for. The secret key's placeholder may go nowhere: a request that
// carries it is a leak.

// maxSignBody is the largest body the proxy reads whole to hash and sign.
const maxSignBody = 8 << 20

// sigv4Request is a SigV4 request the proxy signs again.
type sigv4Request struct {
	keyID, secretKey *policy.Secret
	region, service  string
	declaredHash     string // X-Amz-Content-Sha256 as sent, or ""
}

// parseSigV4 reads the agent's SigV4 Authorization header:
// "AWS4-HMAC-SHA256 Credential=KEYID/DATE/REGION/SERVICE/aws4_request,
// SignedHeaders=…, Signature=…".
func parseSigV4(auth string) (keyID, region, service string, ok bool) {
	rest, found := strings.CutPrefix(auth, "AWS4-HMAC-SHA256 ")
	if !found {
		return "", "", "", false
	}
	for _, part := range strings.Split(rest, ",") {
		cred, found := strings.CutPrefix(strings.TrimSpace(part), "Credential=")
		if !found {
			continue
		}
		f := strings.Split(cred, "/")
		if len(f) != 5 || f[4] != "aws4_request" || f[0] == "" || f[2] == "" || f[3] == "" {
			return "", "", "", false
		}
		return f[0], f[2], f[3], true
	}
	return "", "", "", false
}

// sigv4Check decides a request whose Authorization is a SigV4 signature,
// to a host an aws-sigv4 binding may sign for (keyID, bound and its
// requests: matching): it must name keyID's placeholder and a body hash
// the proxy can check. It returns what signing needs, or why not.
func sigv4Check(r *http.Request, keyID, secretKey *policy.Secret) (*sigv4Request, error) {
	id, region, service, ok := parseSigV4(r.Header.Get("Authorization"))
	switch {
	case !ok:
		return nil, errors.New("the SigV4 Authorization header does not name a credential scope (KEYID/DATE/REGION/SERVICE/aws4_request)")
	case id != keyID.Placeholder:
		return nil, fmt.Errorf("the request is signed with a key other than the placeholder of %s: the proxy signs only with the bound key", keyID.Name)
	case len(r.Header.Values("X-Amz-Content-Sha256")) > 1:
		return nil, errors.New("the request has more than one X-Amz-Content-Sha256 header")
	}
	sr := &sigv4Request{keyID: keyID, secretKey: secretKey, region: region, service: service,
		declaredHash: r.Header.Get("X-Amz-Content-Sha256")}
	if h := sr.declaredHash; h != "" {
		if _, err := hex.DecodeString(h); err != nil || len(h) != 64 {
			return nil, fmt.Errorf("X-Amz-Content-Sha256 is %q, not a SHA-256 of the body: the proxy signs only a body it hashes itself", h)
		}
	}
	return sr, nil
}

// sign signs r again with the real keys: body is r's whole body (read by
// inspect), authority the host the request goes to as the URL names it.
// It drops what the agent's signature set (Authorization, X-Amz-Date) and
// the headers the pipeline would drop after signing (hop by hop, the
// X-Forwarded family), so that every signed header goes out as signed.
func (sr *sigv4Request) sign(r *http.Request, body []byte, scheme, authority string) error {
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	if sr.declaredHash != "" && !strings.EqualFold(sr.declaredHash, hash) {
		return errors.New("X-Amz-Content-Sha256 does not match the body")
	}
	for _, k := range r.Header.Values("Connection") {
		for _, name := range strings.Split(k, ",") {
			r.Header.Del(strings.TrimSpace(name))
		}
	}
	for _, k := range []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization",
		"Te", "Trailer", "Transfer-Encoding", "Upgrade", "Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto",
		"Authorization", "X-Amz-Date", "X-Amz-Security-Token"} {
		r.Header.Del(k)
	}
	r.URL.Scheme, r.URL.Host, r.Host = scheme, authority, ""
	signer := v4.NewSigner(func(o *v4.SignerOptions) {
		// S3 signs the path as sent; other services escape it once more.
		o.DisableURIPathEscaping = strings.HasPrefix(sr.service, "s3")
	})
	creds := aws.Credentials{AccessKeyID: sr.keyID.Value, SecretAccessKey: sr.secretKey.Value}
	return signer.SignHTTP(context.Background(), creds, r, hash, sr.service, sr.region, time.Now().UTC())
}

// sigv4Keys returns the session's aws-sigv4 secrets (nil, nil without).
func sigv4Keys(sec []*policy.Secret) (keyID, secretKey *policy.Secret) {
	for _, x := range sec {
		switch x.Part {
		case policy.PartAWSKeyID:
			keyID = x
		case policy.PartAWSSecretKey:
			secretKey = x
		}
	}
	return keyID, secretKey
}
