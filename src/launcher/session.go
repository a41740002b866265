package launcher

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/engine"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
)

// Session describes one `hobbs run`.
type Session struct {
	Engine    engine.CLI
	Instance  instance.Instance
	Config    *config.Config
	Name      string   // session name (ValidName)
	Image     string   // image to run (from Ensure)
	Workspace string   // absolute host directory
	Command   []string // empty: claude
	UID, GID  int      // user the containers run as
	TTY       bool     // allocate a terminal for the agent

	// Secrets are NAME=value pairs for the agent (vault-mapped env). They
	// are passed as -e NAME with the value in the docker CLI's environment.
	Secrets []string

	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Progress       func(format string, args ...any)

	// ProxyTimeout bounds the wait for the proxy to become healthy.
	ProxyTimeout time.Duration

	mu           sync.Mutex
	created      map[string]bool // what this run made: int, egress, proxy, agent
	token        string
	owner        string
	events       *exec.Cmd  // `docker events` watching for the agent's death
	proxyRemoved chan error // set when the proxy's removal started early
}

// reservedEnv are variables the launcher sets; a vault mapping may not
// override them.
var reservedEnv = map[string]bool{"HOME": true, "USER": true, "PATH": true, "HOBBS_HOME": true, "HOBBS_CONTEXT": true,
	"HTTP_PROXY": true, "HTTPS_PROXY": true, "http_proxy": true, "https_proxy": true, "NO_PROXY": true,
	"no_proxy": true, "ALL_PROXY": true, "all_proxy": true, "CLAUDE_CONFIG_DIR": true}

// CheckSecretNames refuses vault-mapped names that would override what the
// launcher sets.
func CheckSecretNames(secrets []string) error {
	for _, kv := range secrets {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			return errs.Failf("vault env entry without a name")
		}
		if reservedEnv[name] {
			return errs.Usagef("config env maps %s, which hobbs run sets itself", name).
				WithHint("choose another variable name in config.yaml env")
		}
	}
	return nil
}

func (s *Session) labels(role string) []string {
	l := []string{
		"--label", LabelSession + "=" + s.Name,
		"--label", LabelRole + "=" + role,
		"--label", LabelInstance + "=" + InstanceID(s.Instance),
		"--label", LabelOwner + "=" + s.owner,
	}
	if role == RoleAgent {
		l = append(l, "--label", LabelWork+"="+s.Workspace)
	}
	return l
}

func (s *Session) user() string { return fmt.Sprintf("%d:%d", s.UID, s.GID) }

// hardening are the flags both containers share.
func (s *Session) hardening() []string {
	a := []string{"--user", s.user(), "--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--init"}
	if s.Engine.IsPodman() {
		a = append(a, "--userns", "keep-id")
	}
	return a
}

// proxyURL is what the agent's proxy variables hold.
func (s *Session) proxyURL() string {
	return "http://" + TokenUser + ":" + s.token + "@" + ProxyAlias + ":" + ProxyPort
}

// ProxyArgs is the `create` command line of the proxy container. It holds
// no secret: the token arrives later as a file.
func (s *Session) ProxyArgs() []string {
	a := []string{"create", "--name", ProxyName(s.Name), "--hostname", "proxy"}
	a = append(a, s.labels(RoleProxy)...)
	a = append(a, "--network", IntNetwork(s.Name), "--network-alias", ProxyAlias)
	a = append(a, s.hardening()...)
	a = append(a, "--pids-limit", "256", "--memory", "512m",
		"-e", "HOME="+HomeDir, "-e", "HOBBS_HOME="+InstanceDir, "-e", "HOBBS_CONTEXT=proxy",
		// The instance read-only (policy.yaml, watched for changes), its logs
		// writable (audit log), the vault hidden.
		"--mount", "type=bind,source="+s.Instance.Root+",target="+InstanceDir+",readonly",
		"--mount", "type=bind,source="+s.Instance.Logs()+",target="+InstanceDir+"/logs",
		"--tmpfs", InstanceDir+"/vault:ro,size=16k,mode=0555",
		"--entrypoint", "hobbs",
		s.Image,
		"proxy", "--listen", "0.0.0.0:"+ProxyPort,
		"--policy", PolicyFile, "--policy", InstanceDir+"/policy.yaml",
		"--audit", InstanceDir+"/"+ProxyAuditRel,
		"--auth-token-file", TokenFile)
	return a
}

// AgentEnv is the docker CLI child's extra environment for the agent run:
// the proxy variables (holding the token) and the secrets. Their names go
// to argv as -e NAME, their values only here.
func (s *Session) AgentEnv() []string {
	u := s.proxyURL()
	env := []string{"HTTP_PROXY=" + u, "HTTPS_PROXY=" + u, "http_proxy=" + u, "https_proxy=" + u}
	return append(env, s.Secrets...)
}

// AgentArgs is the `run` command line of the agent container.
func (s *Session) AgentArgs() []string {
	a := []string{"run", "--name", s.Name, "--hostname", "hobbs", "-i"}
	if s.TTY {
		a = append(a, "-t")
	}
	a = append(a, s.labels(RoleAgent)...)
	a = append(a, "--network", IntNetwork(s.Name))
	a = append(a, s.hardening()...)
	r := s.Config.Resources
	if r.PIDs > 0 {
		a = append(a, "--pids-limit", strconv.Itoa(r.PIDs))
	}
	if r.Memory != "" {
		a = append(a, "--memory", r.Memory)
	}
	if r.CPUs != "" {
		a = append(a, "--cpus", r.CPUs)
	}
	a = append(a,
		"-e", "HOME="+HomeDir, "-e", "USER=dev",
		"-e", "HOBBS_HOME="+InstanceDir, "-e", "HOBBS_CONTEXT=container",
		"-e", "NO_PROXY=localhost,127.0.0.1", "-e", "no_proxy=localhost,127.0.0.1",
		"-e", "HOBBS_PROXY_WAIT="+ProxyAlias+":"+ProxyPort)
	for _, kv := range s.AgentEnv() {
		name, _, _ := strings.Cut(kv, "=")
		a = append(a, "-e", name)
	}
	a = append(a,
		"--mount", "type=bind,source="+s.Workspace+",target="+WorkspaceDir,
		"--mount", "type=bind,source="+s.Instance.Root+",target="+InstanceDir,
		"--tmpfs", InstanceDir+"/vault/keys:ro,size=16k,mode=0555")
	a = append(a, s.hostControlMounts()...)
	a = append(a,
		"--mount", "type=volume,source="+ClaudeVolume(s.Instance, s.Config.ClaudeVolume)+",target="+ClaudeDir,
		"-w", WorkspaceDir,
		s.Image)
	if len(s.Command) == 0 {
		return append(a, "claude")
	}
	return append(a, s.Command...)
}

// hostControls are the instance paths that steer the host and must not be
// writable by the agent: policy.yaml (the proxy reloads it: a writable copy
// would let the agent allow itself any destination), config.yaml (its env
// mapping decides which secrets the next session gets) and .git (hooks run
// on the host). Each that exists is bind-mounted read-only over the writable
// instance; a mount point can be neither written, replaced nor removed.
var hostControls = []string{"config.yaml", "policy.yaml", ".git"}

func (s *Session) hostControlMounts() []string {
	var a []string
	for _, p := range hostControls {
		src := filepath.Join(s.Instance.Root, p)
		if _, err := os.Lstat(src); err != nil {
			continue
		}
		a = append(a, "--mount", "type=bind,source="+src+",target="+InstanceDir+"/"+p+",readonly")
	}
	return a
}

// tokenTar is the tar stream `docker cp - proxy:/run/hobbs` extracts: the
// token file. The engine makes it root-owned (-a would look the uid up in the
// image's passwd, where the host uid may be missing), so it is 0444: only the
// proxy runs in that container, and nothing else can reach its filesystem.
func (s *Session) tokenTar() []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{Name: "proxy-token", Mode: 0o444, Size: int64(len(s.token)), Uid: s.UID, Gid: s.GID,
		ModTime: time.Now(), Typeflag: tar.TypeReg})
	_, _ = tw.Write([]byte(s.token))
	_ = tw.Close()
	return buf.Bytes()
}

// Run runs the session to its end and returns the agent command's exit
// code. Whatever it created is removed before it returns, also when ctx is
// cancelled (Ctrl-C, SIGTERM): the exit code is then 130.
//
// For a quick start the agent container starts while the proxy process is
// coming up: its entry point holds the command back until the proxy answers
// its health check (HOBBS_PROXY_WAIT), and the launcher stops the agent if
// the proxy fails to become healthy or exits during the session.
func (s *Session) Run(ctx context.Context) (code int, err error) {
	if err := ValidName(s.Name); err != nil {
		return 0, err
	}
	if err := CheckSecretNames(s.Secrets); err != nil {
		return 0, err
	}
	if s.Progress == nil {
		s.Progress = func(string, ...any) {}
	}
	if s.ProxyTimeout == 0 {
		s.ProxyTimeout = 30 * time.Second
	}
	s.token = randHex(24)
	s.owner = Owner()
	for _, d := range []string{s.Instance.Logs(), s.Instance.VaultKeys()} {
		// Mount points inside bind mounts must exist, or the engine creates
		// them as root in the user's directory.
		if err := os.MkdirAll(d, 0o700); err != nil {
			return 0, errs.Wrap(errs.Failure, err, "prepare instance")
		}
	}
	e := s.Engine

	// Leftovers of crashed sessions of this instance go first (then the
	// names this session needs must be free); in parallel, the networks and
	// the Claude state volume. Cleanup removes only what this run made: a
	// name clash must never cost someone else's container or network.
	var reapErr error
	made := func(what string, err error) error {
		if err == nil {
			s.made(what)
		}
		return err
	}
	err = parallel(
		func() error {
			_, reapErr = ReapOrphans(ctx, e, s.Instance)
			out, err := e.Output(ctx, "ps", "-aq", "--filter", "name=^/"+regexp.QuoteMeta(s.Name)+"$",
				"--filter", "name=^/"+regexp.QuoteMeta(ProxyName(s.Name))+"$")
			if err == nil && out != "" {
				return errs.Usagef("a container named %s or %s exists already", s.Name, ProxyName(s.Name)).
					WithHint("choose another --name (hobbs ps lists the sessions)")
			}
			return err
		},
		func() error {
			_, err := e.Output(ctx, append(append([]string{"network", "create", "--internal"}, s.labels(RoleNetwork)...), IntNetwork(s.Name))...)
			return made("int", err)
		},
		func() error {
			_, err := e.Output(ctx, append(append([]string{"network", "create"}, s.labels(RoleNetwork)...), EgressNetwork(s.Name))...)
			return made("egress", err)
		},
		func() error {
			_, err := e.Output(ctx, "volume", "create", "--label", LabelRole+"="+RoleClaude,
				"--label", LabelInstance+"="+InstanceID(s.Instance), ClaudeVolume(s.Instance, s.Config.ClaudeVolume))
			return err
		},
	)
	defer func() {
		if cerr := s.cleanup(); cerr != nil && err == nil {
			err = cerr
		}
		if ctx.Err() != nil {
			code, err = errs.Interrupted, &errs.Error{Code: errs.Interrupted, Msg: "interrupted"}
		}
	}()
	if reapErr != nil {
		s.Progress("warning: could not remove leftovers of earlier sessions: %v", reapErr)
	}
	if err != nil {
		return 0, err
	}
	s.made("agent") // the name is free: a container by that name is ours
	s.made("proxy")

	// The agent starts once the proxy's container has started (its name
	// resolves then; before, a lookup of it hangs on the internal network),
	// while the proxy process comes up.
	if err := s.startProxy(ctx); err != nil {
		return 0, err
	}
	// The engine reports the agent's death ("die") well before `docker
	// run` returns: it first detaches the container from its network.
	// Removing the proxy meanwhile takes that time off the way out.
	died := s.watchDie(ctx)
	agent, err := s.startAgent(ctx)
	if err != nil {
		return 0, err
	}
	proxyErr := make(chan error, 1)
	go func() { proxyErr <- s.waitProxy(ctx) }()

	var perr error
	select {
	case res := <-agent.done:
		// The agent ended (it cannot have run its command without the proxy
		// unless the proxy came up); report a proxy failure first.
		if perr = <-proxyErr; perr != nil {
			return 0, perr
		}
		return agent.result(res)
	case perr = <-proxyErr:
	case <-ctx.Done():
		return agent.stop(s), nil
	}
	if perr != nil {
		agent.kill(s)
		return 0, perr
	}
	// The proxy is up. Watch it for the rest of the session.
	proxyGone := make(chan string, 1)
	watchCtx, stopWatch := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWatch()
	go func() {
		out, err := e.Output(watchCtx, "wait", ProxyName(s.Name))
		if err == nil && watchCtx.Err() == nil {
			proxyGone <- out
		}
	}()
	for {
		select {
		case res := <-agent.done:
			return agent.result(res)
		case <-died:
			died = nil
			stopWatch()
			removed := make(chan error, 1)
			s.proxyRemoved = removed
			go func() { removed <- s.rmContainer(context.WithoutCancel(ctx), ProxyName(s.Name)) }()
		case status := <-proxyGone:
			agent.kill(s)
			return 0, s.proxyFailed("it exited with status " + status + " during the session")
		case <-ctx.Done():
			return agent.stop(s), nil
		}
	}
}

// watchDie returns a channel closed when the engine reports the agent
// container's death. It never closes if the events stream cannot be read;
// the session then ends when `docker run` returns, only later.
func (s *Session) watchDie(ctx context.Context) <-chan struct{} {
	died := make(chan struct{})
	cmd, err := s.Engine.Command(ctx, nil, "events", "--filter", "container="+s.Name, "--filter", "event=die",
		"--format", "{{.Status}}")
	if err != nil {
		return died
	}
	out, err := cmd.StdoutPipe()
	if err != nil || cmd.Start() != nil {
		return died
	}
	s.events = cmd
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "die") {
				close(died)
				break
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	return died
}

func (s *Session) rmContainer(ctx context.Context, name string) error {
	if _, err := s.Engine.Output(ctx, "rm", "-f", name); err != nil && !isNoSuch(err) {
		return err
	}
	return nil
}

// made records that this run created what ("int", "egress", "proxy", "agent").
func (s *Session) made(what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.created == nil {
		s.created = map[string]bool{}
	}
	s.created[what] = true
}

func (s *Session) has(what string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.created[what]
}

// parallel runs fs concurrently and returns their errors joined.
func parallel(fs ...func() error) error {
	errc := make(chan error, len(fs))
	for _, f := range fs {
		go func() { errc <- f() }()
	}
	var all []error
	for range fs {
		if err := <-errc; err != nil {
			all = append(all, err)
		}
	}
	return errors.Join(all...)
}

// startProxy creates the proxy container, connects it to the egress network,
// copies the token in and starts it.
func (s *Session) startProxy(ctx context.Context) error {
	e := s.Engine
	if _, err := e.Output(ctx, s.ProxyArgs()...); err != nil {
		return err
	}
	if _, err := e.Output(ctx, "network", "connect", EgressNetwork(s.Name), ProxyName(s.Name)); err != nil {
		return err
	}
	cp, err := e.Command(ctx, nil, "cp", "-", ProxyName(s.Name)+":"+TokenDir)
	if err != nil {
		return err
	}
	cp.Stdin = bytes.NewReader(s.tokenTar())
	if out, err := cp.CombinedOutput(); err != nil {
		return errs.Failf("%s cp (proxy token): %s", e.Bin, strings.TrimSpace(string(out)))
	}
	if _, err := e.Output(ctx, "start", ProxyName(s.Name)); err != nil {
		return s.proxyFailed(firstLine(err.Error()))
	}
	return nil
}

// waitProxy waits until the started proxy answers its health check.
func (s *Session) waitProxy(ctx context.Context) error {
	e := s.Engine
	deadline := time.Now().Add(s.ProxyTimeout)
	for {
		_, err := e.Output(ctx, "exec", ProxyName(s.Name), "hobbs", "proxy", "health", "--addr", "127.0.0.1:"+ProxyPort)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		st, _ := e.Output(ctx, "inspect", "--format", "{{.State.Status}}", ProxyName(s.Name))
		if st == "exited" || st == "dead" {
			return s.proxyFailed("it exited at start (its output below; /home/dev/.hobbs is your instance directory)")
		}
		if time.Now().After(deadline) {
			return s.proxyFailed(fmt.Sprintf("not healthy after %v: %s", s.ProxyTimeout, firstLine(err.Error())))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// proxyFailed builds the error for a proxy that did not come up or died,
// with the end of its output.
func (s *Session) proxyFailed(why string) error {
	msg := "egress proxy failed: " + why
	if c, err := s.Engine.Command(context.Background(), nil, "logs", "--tail", "20", ProxyName(s.Name)); err == nil {
		if out, _ := c.CombinedOutput(); len(bytes.TrimSpace(out)) > 0 {
			msg += "\nproxy output:\n" + strings.TrimSpace(string(out))
		}
	}
	return errs.Failf("%s", msg).WithHint("check the policy with hobbs policy show, and the proxy output above")
}

// agentRun is the running `docker run` of the agent.
type agentRun struct {
	cmd  *exec.Cmd
	done chan error
}

// startAgent starts the agent container. Its entry point waits for the
// proxy before running the command.
func (s *Session) startAgent(ctx context.Context) (*agentRun, error) {
	// The CLI itself must not send its daemon traffic (tcp:// or ssh://
	// DOCKER_HOST) to the agent's proxy variables it carries: NO_PROXY=* for
	// the CLI; the container's NO_PROXY is given in argv.
	env := append(s.AgentEnv(), "NO_PROXY=*", "no_proxy=*")
	cmd, err := s.Engine.Command(context.WithoutCancel(ctx), env, s.AgentArgs()...)
	if err != nil {
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = s.Stdin, s.Stdout, s.Stderr
	if err := cmd.Start(); err != nil {
		return nil, errs.Wrap(errs.Failure, err, "start agent")
	}
	a := &agentRun{cmd: cmd, done: make(chan error, 1)}
	go func() { a.done <- cmd.Wait() }()
	return a, nil
}

// result turns the docker CLI's end into the agent's exit code.
func (a *agentRun) result(werr error) (int, error) {
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		return ee.ExitCode(), nil
	}
	if werr != nil {
		return 0, errs.Wrap(errs.Failure, werr, "agent")
	}
	return 0, nil
}

// stop ends an interrupted session: the docker CLI passes SIGTERM on to the
// command; after a grace period the container is removed.
func (a *agentRun) stop(s *Session) int {
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.done:
	case <-time.After(5 * time.Second):
		a.kill(s)
	}
	return errs.Interrupted
}

// kill removes the agent container and waits for the docker CLI to end.
func (a *agentRun) kill(s *Session) {
	_, _ = s.Engine.Output(context.Background(), "rm", "-f", s.Name)
	select {
	case <-a.done:
	case <-time.After(2 * time.Second): // the CLI may not notice a removed container
		_ = a.cmd.Process.Kill()
		<-a.done
	}
}

// cleanup removes the session's containers and networks (not the volume).
// The names are known: the two containers go in parallel (each takes the
// engine a while to detach from its networks), then the networks.
func (s *Session) cleanup() error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if s.events != nil {
		_ = s.events.Process.Kill()
		_ = s.events.Wait()
	}
	var rms []func() error
	if s.has("agent") {
		rms = append(rms, func() error { return s.rmContainer(ctx, s.Name) })
	}
	if s.proxyRemoved != nil { // already on its way (the agent died)
		rms = append(rms, func() error { return <-s.proxyRemoved })
	} else if s.has("proxy") {
		rms = append(rms, func() error { return s.rmContainer(ctx, ProxyName(s.Name)) })
	}
	if err := parallel(rms...); err != nil {
		return err
	}
	netRm := func(name string) func() error {
		return func() error {
			if _, err := s.Engine.Output(ctx, "network", "rm", name); err != nil && !isNoSuch(err) {
				return err
			}
			return nil
		}
	}
	var nets []func() error
	if s.has("int") {
		nets = append(nets, netRm(IntNetwork(s.Name)))
	}
	if s.has("egress") {
		nets = append(nets, netRm(EgressNetwork(s.Name)))
	}
	return parallel(nets...)
}

// removeSession removes every container and network labelled as session n.
func removeSession(ctx context.Context, e engine.CLI, n string) error {
	f := "label=" + LabelSession + "=" + n
	ids, err := e.Output(ctx, "ps", "-aq", "--filter", f)
	if err != nil {
		return err
	}
	if ids != "" {
		if _, err := e.Output(ctx, append([]string{"rm", "-f"}, strings.Fields(ids)...)...); err != nil && !isNoSuch(err) {
			return err
		}
	}
	nets, err := e.Output(ctx, "network", "ls", "-q", "--filter", f)
	if err != nil {
		return err
	}
	if nets != "" {
		if _, err := e.Output(ctx, append([]string{"network", "rm"}, strings.Fields(nets)...)...); err != nil && !isNoSuch(err) {
			return err
		}
	}
	return nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// sortedKeys returns m's keys sorted.
func sortedKeys[V any](m map[string]V) []string {
	k := make([]string, 0, len(m))
	for x := range m {
		k = append(k, x)
	}
	sort.Strings(k)
	return k
}
