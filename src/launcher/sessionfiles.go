package launcher

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/plan"
	"github.com/hobbs-agent/hobbs/src/playbook"
	"github.com/hobbs-agent/hobbs/src/policy"
)

// Session files (plan.SessionDir). What a session must hand its
// containers but no one else may read — the vault-mapped variables, the
// proxy variables holding the token, the proxy's token, the session CA's
// key and the bound secrets' values — the launcher writes to files in a
// directory of its own on a tmpfs (memory, never disk: $XDG_RUNTIME_DIR,
// else /dev/shm), mode 0700 and 0600; the plan mounts each read-only into
// the one container it is for (Plan.SessionFiles). The directory is
// removed when the session ends, or by the next run when its launcher was
// killed first.

// maxSeed bounds the sign-in the launcher takes from the seed (seed.go).
const maxSeed = 64 << 10

// sessionFilesBase is where the session's private directory is made: a
// tmpfs when the host has one for the user.
func sessionFilesBase() (base string, onTmpfs bool) {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			return d, true
		}
	}
	if runtime.GOOS == "linux" {
		if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
			return "/dev/shm", true
		}
	}
	return os.TempDir(), false
}

// writeSessionFiles makes the session's private directory and writes the
// agent's variables and the proxy's token into it. The directory's name is
// random (made with O_EXCL semantics), so another user of a shared tmpfs
// cannot have prepared it.
func (s *Session) writeSessionFiles() error {
	base, tmpfs := sessionFilesBase()
	reapSessionFiles(base)
	dir, err := os.MkdirTemp(base, "hobbs-session-")
	if err != nil {
		return errs.Wrap(errs.Failure, err, "session files")
	}
	s.filesDir = dir
	if !tmpfs {
		s.Progress("warning: no tmpfs for the session's secrets (XDG_RUNTIME_DIR unset); they are in %s until the session ends", dir)
	}
	files, err := s.secretFiles()
	if err != nil {
		return err
	}
	env, err := json.Marshal(envMap(s.AgentEnv()))
	if err != nil {
		return errs.Wrap(errs.Failure, err, "session files")
	}
	files["env"], files["token"], files["owner"] = env, []byte(s.token+"\n"), []byte(s.owner+"\n")
	if s.plan.ProxyPolicy != nil {
		files["policy.yaml"] = s.plan.ProxyPolicy
	}
	if s.plan.PlaybookText != nil {
		files["playbook.md"] = s.plan.PlaybookText
	}
	if s.plan.Event != nil {
		files["event.json"] = s.plan.Event
	}
	for name, data := range s.plan.Attachments {
		files["attachment-"+name] = data // names checked by the plan (plan.attachments)
	}
	if s.plan.Seed != nil {
		files["claude-credentials"] = nil // filled in by seedClaude, before the agent starts
	}
	if files["review.json"], err = s.reviewList(); err != nil {
		return err
	}
	if s.plan.PlaybookText != nil {
		if err := writeRunAssets(filepath.Join(dir, "assets"), s.plan.RunAssets); err != nil {
			return errs.Wrap(errs.Failure, err, "session files: the run's skills and sub-agents")
		}
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return errs.Wrap(errs.Failure, err, "session files")
		}
	}
	return nil
}

// writeRunAssets writes the approved copies of a run's skills and
// sub-agents into dir (plan.SessionAssetsDir): skills/NAME/… and
// agents/NAME.md, both directories made even when empty, so that the run
// links these and nothing else; a file its owner could run (Exec) keeps
// that bit. A path that would leave its asset's directory is refused.
func writeRunAssets(dir string, files []playbook.AssetFile) error {
	for _, d := range []string{dir, filepath.Join(dir, "skills"), filepath.Join(dir, "agents")} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return err
		}
	}
	for _, f := range files {
		if !filepath.IsLocal(f.Name) || strings.ContainsAny(f.Name, `/\`) {
			return fmt.Errorf("%s %q: not a name", f.Kind, f.Name)
		}
		var target string
		switch rest, ok := strings.CutPrefix(f.Path, "skills/"+f.Name+"/"); {
		case f.Kind == "skill" && ok && filepath.IsLocal(rest):
			target = filepath.Join(dir, "skills", f.Name, filepath.FromSlash(rest))
		case f.Kind == "agent" && f.Path == "agents/custom/"+f.Name+".md" && filepath.IsLocal(f.Name+".md"):
			target = filepath.Join(dir, "agents", f.Name+".md")
		default:
			return fmt.Errorf("%s %s: %s is not one of its files", f.Kind, f.Name, f.Path)
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
			return err
		}
		perm := os.FileMode(0o600)
		if f.Exec {
			perm = 0o700
		}
		if err := os.WriteFile(target, f.Data, perm); err != nil {
			return err
		}
	}
	return nil
}

// reviewList is the list of changes waiting for the owner's review that
// the agent gets read-only (provenance.SessionList).
func (s *Session) reviewList() ([]byte, error) {
	if s.Provenance == nil {
		return []byte("[]\n"), nil
	}
	var b bytes.Buffer
	if err := s.Provenance.WriteSessionList(&b); err != nil {
		return nil, errs.Wrap(errs.Failure, err, "the list of changes waiting for review")
	}
	return b.Bytes(), nil
}

// secretFiles makes the session CA and a placeholder for every binding, and
// returns the files that carry them: the proxy's secrets file (CA key and
// values), the agent's CA certificate and, for tests, the proxy's extra
// roots.
func (s *Session) secretFiles() (map[string][]byte, error) {
	certPEM, keyPEM, err := policy.NewSessionCA(s.Name)
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "session CA")
	}
	ss := policy.SessionSecrets{CACert: certPEM, CAKey: keyPEM, Secrets: []*policy.Secret{}}
	for _, b := range s.Bound {
		if b.Placeholder, err = policy.NewPlaceholder(b.Value); err != nil {
			return nil, errs.Wrap(errs.Failure, err, "placeholder for %s", b.Name)
		}
		ss.Secrets = append(ss.Secrets, b)
	}
	sec, err := json.Marshal(ss)
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "session files")
	}
	files := map[string][]byte{"secrets": sec, "ca.pem": []byte(certPEM)}
	if p := os.Getenv(plan.EnvTestUpstreamCA); p != "" {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, errs.Wrap(errs.Usage, err, "%s", plan.EnvTestUpstreamCA)
		}
		files["upstream.pem"] = b
	}
	return files, nil
}

// reapSessionFiles removes the session directories in base that a launcher
// killed before its cleanup left behind: this user's own (a real
// directory, not a link, owned by this uid), whose owner process is gone.
func reapSessionFiles(base string) {
	ents, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "hobbs-session-") {
			continue
		}
		dir := filepath.Join(base, e.Name())
		fi, err := os.Lstat(dir)
		if err != nil || !fi.IsDir() || !ownedByMe(fi) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, "owner"))
		if err != nil || OwnerAlive(strings.TrimSpace(string(b))) {
			continue
		}
		_ = os.RemoveAll(dir)
	}
}

// removeSessionFiles removes the session's private directory.
func (s *Session) removeSessionFiles() {
	if s.filesDir != "" {
		_ = os.RemoveAll(s.filesDir)
	}
}

func ownedByMe(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}

func envMap(kvs []string) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

// ReadSessionEnv reads a session's variables file (plan.SessionEnvFile) as
// NAME=value pairs, sorted. A missing file is no error (compose and the
// devcontainer have none): it returns nothing.
func ReadSessionEnv(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	kvs := make([]string, 0, len(m))
	for k, v := range m {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.Contains(v, "\x00") {
			return nil, fmt.Errorf("%s: invalid variable %q", path, k)
		}
		kvs = append(kvs, k+"="+v)
	}
	sort.Strings(kvs)
	return kvs, nil
}

// CABundleVars makes the CA bundle a session's tools trust — the image's
// system bundle plus the session CA at caFile, which signs the certificates
// the proxy presents for intercepted hosts — in a new private directory
// under tmp, and returns the variables that point common tools at it
// (OpenSSL, curl, git, Python requests; Node adds the session CA to its
// own roots). No caFile (compose, the devcontainer): nothing.
func CABundleVars(caFile, tmp string) ([]string, error) {
	ca, err := os.ReadFile(caFile)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var bundle []byte
	for _, sys := range systemBundles {
		if b, err := os.ReadFile(sys); err == nil {
			bundle = append(b, '\n')
			break
		}
	}
	bundle = append(bundle, ca...)
	dir, err := os.MkdirTemp(tmp, "hobbs-ca-")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "ca-bundle.pem")
	if err := os.WriteFile(path, bundle, 0o644); err != nil {
		return nil, err
	}
	return []string{"SSL_CERT_FILE=" + path, "CURL_CA_BUNDLE=" + path, "REQUESTS_CA_BUNDLE=" + path,
		"GIT_SSL_CAINFO=" + path, "NODE_EXTRA_CA_CERTS=" + caFile}, nil
}

// systemBundles are where distributions keep their CA bundle.
var systemBundles = []string{
	"/etc/ssl/certs/ca-certificates.crt", // Debian, Ubuntu, Alpine
	"/etc/pki/tls/certs/ca-bundle.crt",   // Fedora, RHEL
	"/etc/ssl/ca-bundle.pem",             // openSUSE
	"/etc/ssl/cert.pem",                  // Alpine, macOS
}

// SessionEnviron is what hobbs session-env adds to the environment of the
// command it runs: the session's variables (plan.SessionEnvFile) and the CA
// bundle variables for the session CA (CABundleVars, in tmp). caErr says
// why the bundle could not be made: HTTPS to hosts the proxy intercepts
// will fail, the rest works. In a headless run it first copies the run's
// sign-in into Claude Code's fresh directory (SeedClaudeState).
func SessionEnviron(tmp string) (env []string, caErr, err error) {
	env, err = ReadSessionEnv(plan.SessionEnvFile)
	if err != nil {
		return nil, nil, errs.Wrap(errs.Failure, err, "session variables")
	}
	if err := SeedClaudeState(os.Getenv("CLAUDE_CONFIG_DIR")); err != nil {
		return nil, nil, errs.Wrap(errs.Failure, err, "copy the run's Claude Code sign-in")
	}
	ca, caErr := CABundleVars(plan.SessionCAFile, tmp)
	return append(env, ca...), caErr, nil
}
