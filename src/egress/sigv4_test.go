package egress

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/hobbs-agent/hobbs/src/policy"
)

// The example keys of AWS's documentation.
const (
	awsKeyID     = "AKIAIOSFODNN7EXAMPLE"
	awsSecretKey = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
)

// fakeAWS is a fake AWS endpoint (AWS itself cannot be reached here): it
// checks each request's Signature Version 4 as AWS documents it
// (docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html),
// by signing the request's signed headers again with the real keys at the
// request's X-Amz-Date, with aws-sdk-go-v2's signer.
type fakeAWS struct {
	mu      sync.Mutex
	results []string // "ok KEYID" or what failed
}

func (f *fakeAWS) handler(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	res := f.verify(r, body)
	f.mu.Lock()
	f.results = append(f.results, res)
	f.mu.Unlock()
	if !strings.HasPrefix(res, "ok") {
		http.Error(w, res, http.StatusForbidden)
		return
	}
	io.WriteString(w, "signed-ok")
}

func (f *fakeAWS) verify(r *http.Request, body []byte) string {
	auth := r.Header.Get("Authorization")
	id, region, service, ok := parseSigV4(auth)
	if !ok {
		return "no SigV4 credential: " + auth
	}
	if id != awsKeyID {
		return "credential names " + id
	}
	var signed []string
	for _, p := range strings.Split(strings.TrimPrefix(auth, "AWS4-HMAC-SHA256 "), ",") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(p), "SignedHeaders="); ok {
			signed = strings.Split(v, ";")
		}
	}
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return "X-Amz-Date: " + err.Error()
	}
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	if h := r.Header.Get("X-Amz-Content-Sha256"); h != "" && h != hash {
		return "X-Amz-Content-Sha256 does not match the body"
	}
	c := r.Clone(context.Background())
	c.Header = http.Header{}
	for _, h := range signed {
		if h != "host" && h != "content-length" {
			c.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	c.URL.Host, c.Host = r.Host, r.Host
	s := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = strings.HasPrefix(service, "s3") })
	if err := s.SignHTTP(context.Background(), aws.Credentials{AccessKeyID: awsKeyID, SecretAccessKey: awsSecretKey},
		c, hash, service, region, at); err != nil {
		return err.Error()
	}
	if c.Header.Get("Authorization") != auth {
		return "bad signature:\n got  " + auth + "\n want " + c.Header.Get("Authorization")
	}
	return "ok " + id
}

// startAWSEnv is startSecretEnv with an aws-sigv4 binding to example.com
// (GITHUB_TOKEN becomes the access key id, OTHER_KEY the secret key) and a
// fake AWS endpoint there; it returns the agent's placeholders.
func startAWSEnv(t *testing.T) (e *secretEnv, f *fakeAWS, idPH, secretPH string) {
	t.Helper()
	idPH, _ = policy.NewPlaceholder(awsKeyID)
	secretPH, _ = policy.NewPlaceholder(awsSecretKey)
	var hosts []string
	e = startSecretEnvTB(t, "", func(x *policy.Secret) {
		switch x.Name {
		case "GITHUB_TOKEN":
			x.Name, x.Kind, x.Part, x.Value, x.Placeholder = "AWS_ACCESS_KEY_ID", policy.KindAWSSigV4, policy.PartAWSKeyID, awsKeyID, idPH
			hosts = x.Hosts
		case "OTHER_KEY":
			x.Name, x.Kind, x.Part, x.Value, x.Placeholder, x.Hosts = "AWS_SECRET_ACCESS_KEY", policy.KindAWSSigV4, policy.PartAWSSecretKey, awsSecretKey, secretPH, hosts
		}
	})
	f = &fakeAWS{}
	e.bound.Config.Handler = http.HandlerFunc(f.handler)
	return e, f, idPH, secretPH
}

// agentSigned is a request signed as an SDK in the agent's container
// signs it: with the placeholders.
func agentSigned(t *testing.T, method, u, body, keyID, secret, service string, hdr map[string]string) *http.Request {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	sum := sha256.Sum256([]byte(body))
	hash := hex.EncodeToString(sum[:])
	if h, ok := hdr["X-Amz-Content-Sha256"]; ok {
		hash = h
	}
	s := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = service == "s3" })
	if err := s.SignHTTP(context.Background(), aws.Credentials{AccessKeyID: keyID, SecretAccessKey: secret}, req, hash, service, "eu-west-1", time.Now()); err != nil {
		t.Fatal(err)
	}
	return req
}

// TestSigV4Resign: a request the agent signs with the placeholders reaches
// the host signed with the real keys, for S3 and for a service that
// escapes paths, with and without a body.
func TestSigV4Resign(t *testing.T) {
	e, f, idPH, secretPH := startAWSEnv(t)
	if !regexp.MustCompile(`^AKIA[A-Z2-7]{16}$`).MatchString(idPH) {
		t.Fatalf("the key id's placeholder %q is not a key id", idPH)
	}
	base := "https://example.com:" + e.boundPort
	c := e.client()
	for _, tc := range []struct {
		method, path, body, service string
		hdr                         map[string]string
	}{
		{"GET", "/bucket/key%20with%20space.txt", "", "s3", map[string]string{"X-Amz-Content-Sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}},
		{"PUT", "/bucket/object", "the object's bytes", "s3", map[string]string{"X-Amz-Content-Sha256": sha("the object's bytes"), "Content-Type": "text/plain"}},
		{"POST", "/", `{"TableName":"t"}`, "dynamodb", map[string]string{"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "DynamoDB_20120810.DescribeTable"}},
		{"GET", "/prod/a b/c", "", "execute-api", nil},
	} {
		req := agentSigned(t, tc.method, base+tc.path, tc.body, idPH, secretPH, tc.service, tc.hdr)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		f.mu.Lock()
		last := f.results[len(f.results)-1]
		f.mu.Unlock()
		if resp.StatusCode != 200 || last != "ok "+awsKeyID {
			t.Errorf("%s %s (%s): %d %q; the fake AWS says %s", tc.method, tc.path, tc.service, resp.StatusCode, got, last)
		}
	}
	mustWaitFor(t, 10*time.Second, func() bool { return strings.Contains(readFile(t, e.audit), `"AWS_SECRET_ACCESS_KEY"`) })
	if log := readFile(t, e.audit); strings.Contains(log, awsSecretKey) || !strings.Contains(log, `"secrets":["AWS_ACCESS_KEY_ID","AWS_SECRET_ACCESS_KEY"]`) {
		t.Errorf("audit: want the secrets named, never the secret key:\n%s", log)
	}
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// ATTACK: requests the proxy would sign without knowing what it signs, or
// that carry the secret key's placeholder, or that name another key.
func TestAttackSigV4(t *testing.T) {
	e, f, idPH, secretPH := startAWSEnv(t)
	base := "https://example.com:" + e.boundPort
	c := e.client()
	presign := func() *http.Request {
		req, _ := http.NewRequest("GET", base+"/bucket/key", nil)
		u, _, err := v4.NewSigner().PresignHTTP(context.Background(), aws.Credentials{AccessKeyID: idPH, SecretAccessKey: secretPH},
			req, "UNSIGNED-PAYLOAD", "s3", "eu-west-1", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		req, _ = http.NewRequest("GET", u, nil)
		return req
	}
	for _, tc := range []struct {
		name string
		req  *http.Request
		want string
	}{
		{"unsigned payload", agentSigned(t, "PUT", base+"/bucket/k", "data", idPH, secretPH, "s3", map[string]string{"X-Amz-Content-Sha256": "UNSIGNED-PAYLOAD"}), "aws-sigv4"},
		{"streaming signature", agentSigned(t, "PUT", base+"/bucket/k", "data", idPH, secretPH, "s3", map[string]string{"X-Amz-Content-Sha256": "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"}), "aws-sigv4"},
		{"hash of another body", agentSigned(t, "PUT", base+"/bucket/k", "data", idPH, secretPH, "s3", map[string]string{"X-Amz-Content-Sha256": sha("other")}), "does not match the body"},
		{"another key", agentSigned(t, "GET", base+"/bucket/k", "", "AKIAOTHERKEY7EXAMPLE", secretPH, "s3", nil), "a key other than the placeholder of AWS_ACCESS_KEY_ID"},
		{"secret key placeholder in a header", agentSigned(t, "GET", base+"/bucket/k", "", idPH, secretPH, "s3", map[string]string{"X-Debug": secretPH}), "AWS_SECRET_ACCESS_KEY in its header"},
		{"secret key placeholder in the body", agentSigned(t, "POST", base+"/", `{"k":"`+secretPH+`"}`, idPH, secretPH, "dynamodb", nil), "AWS_SECRET_ACCESS_KEY in its body"},
		{"presigned URL", presign(), "AWS_ACCESS_KEY_ID in its query"},
	} {
		resp, err := c.Do(tc.req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 403 || !strings.Contains(string(got), tc.want) {
			t.Errorf("%s: %d %q, want a 403 saying %q", tc.name, resp.StatusCode, got, tc.want)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.results) != 0 {
		t.Errorf("refused requests reached the host: %v", f.results)
	}
	// The secret key's placeholder to another host is a leak, too.
	code, body := do(t, c, "GET", "http://plain.test:"+e.plainPort()+"/?k="+url.QueryEscape(secretPH), "", "", "")
	if code != 403 || !strings.Contains(body, "AWS_SECRET_ACCESS_KEY") {
		t.Errorf("secret key placeholder to another host: %d %q", code, body)
	}
	// A response quoting the secret key is masked.
	e.bound.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "key=%s id=%s", awsSecretKey, awsKeyID)
	})
	_, body = do(t, c, "GET", base+"/", "", "", "")
	if strings.Contains(body, awsSecretKey) || strings.Contains(body, awsKeyID) || !strings.Contains(body, secretPH) {
		t.Errorf("response not masked: %q", body)
	}
}

// TestFakeAWSVerifies: the fake refuses what AWS would — a signature made
// with another secret key, a body changed after signing — and accepts a
// request signed with the real keys.
func TestFakeAWSVerifies(t *testing.T) {
	f := &fakeAWS{}
	check := func(req *http.Request) string {
		body := []byte{}
		if req.Body != nil {
			body, _ = io.ReadAll(req.Body)
		}
		req.Host = req.URL.Host
		return f.verify(req, body)
	}
	good := agentSigned(t, "PUT", "https://s3.example/b/k", "data", awsKeyID, awsSecretKey, "s3", map[string]string{"X-Amz-Content-Sha256": sha("data")})
	if got := check(good); got != "ok "+awsKeyID {
		t.Fatalf("real keys: %s", got)
	}
	if got := check(agentSigned(t, "GET", "https://s3.example/b/k", "", awsKeyID, "another-secret", "s3", nil)); !strings.HasPrefix(got, "bad signature") {
		t.Errorf("another secret key: %s", got)
	}
	changed := agentSigned(t, "POST", "https://db.example/", "data", awsKeyID, awsSecretKey, "dynamodb", nil)
	changed.Body = io.NopCloser(strings.NewReader("DATA"))
	if got := check(changed); !strings.HasPrefix(got, "bad signature") {
		t.Errorf("body changed after signing: %s", got)
	}
}
