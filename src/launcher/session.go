package launcher

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
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
	"github.com/hobbs-agent/hobbs/src/policy"
	"github.com/hobbs-agent/hobbs/src/provenance"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// Session is the executor of one plan (Execute): it creates, starts,
// follows and removes the session's objects. Its exported fields other
// than the plan's are what only the launcher's process knows: the engine,
// the streams, the secrets' values.
type Session struct {
	Engine    engine.CLI
	Instance  instance.Instance
	Config    *config.Config
	Name      string   // session name (ValidName)
	Image     string   // image to run (ImageRef); Prepare makes sure it is current
	Workspace string   // absolute host directory
	Command   []string // empty: claude
	UID, GID  int      // user the containers run as
	TTY       bool     // allocate a terminal for the agent
	// Detached: the launcher runs in the background (hobbs run --detach):
	// the agent gets a terminal for later attaches, and the launcher
	// follows its output without holding its input.
	Detached bool
	// ReadyFile, when set, makes the launcher leave the agent's start to
	// another process (the terminal's `hobbs run`, which attaches to it):
	// once the agent may start, the launcher creates ReadyFile, and it
	// follows the agent by the engine's events. The session outlives that
	// process when it detaches.
	ReadyFile string

	// Secrets are NAME=value pairs for the agent (vault-mapped env). They
	// are passed as -e NAME with the value in the docker CLI's environment.
	Secrets []string
	// Bindings are the secrets bound to hosts (config secrets:): the agent
	// gets placeholders, the proxy the values (sessionfiles.go).
	Bindings       []Binding
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Progress       func(format string, args ...any)

	// ProxyTimeout bounds the wait for the proxy to become healthy.
	ProxyTimeout time.Duration

	// Prepare, when set, makes sure Image is current (Ensure: the image
	// check, a build or a pull) while the session's objects are created —
	// the containers among them, from the image Image names as it is then,
	// which saves the check's time at every start. It reports whether it
	// changed what Image names (built or pulled it): the containers are
	// then made again. Its error ends the session (after cleanup).
	Prepare func(ctx context.Context) (changed bool, err error)

	// Provenance, when set, records the session's origin before the agent
	// can write and, at its end, holds what a tainted session changed in
	// the shares for review (provenance.go).
	Provenance *provenance.Store
	// Neutralise, when set, moves what host tools act on out of the
	// shares (Plan.neutralise): with when "start" before the record
	// begins, while the image is checked and the objects are created, and
	// with "end" once the agent's container is gone, before the shares are
	// read for the record's end.
	Neutralise func(when string)

	mu               sync.Mutex
	created          map[string]bool // what this run made: int, egress, proxy, agent
	token            string
	owner            string
	events           *exec.Cmd // `docker events` watching the containers
	agentID, proxyID string    // ids of the created containers
	runVolume        string    // the socket volume's name (RunVolume)
	proxyStop        *future   // the proxy's stop, once started early
	ev               *events   // what the engine's event stream told
	agentEnded       bool      // the agent's `start --attach` returned its status
	began            *future   // the start's Neutralise and the provenance record's begin
	neutralisedEnd   sync.Once // the end's Neutralise
	snapshot         *future   // the shares read once the agent is gone (provenance.go)
	snap             *provenance.Snapshot

	// plan is what the session carries out: its containers, mounts,
	// policy and command (NewPlan).
	plan *Plan

	// filesDir is the session's private directory on a tmpfs holding what
	// its containers get but the engine must not keep (sessionfiles.go).
	filesDir string

	// The workspace as mounted (links resolved) and whether its .git is
	// mounted read-only (workspace.go).
	workspace  string
	gitCovered bool
}

// usePlan makes p the session's plan: what its containers are created with.
func (s *Session) usePlan(p *Plan) {
	s.plan = p
	s.runVolume = p.runVolume
	s.workspace, s.gitCovered = p.Workspace, p.WorkspaceGitReadOnly
}

// AgentArgs is the `create` command line of the agent container (the
// plan's, with the session's files and owner). The engine removes it when
// its command ends (--rm): `start --attach` returns once it is gone, and no
// removal of the launcher's is left on the way out.
func (s *Session) AgentArgs() []string { return s.plan.Agent.args(s.filesDir, s.owner, s.plan.podman) }

// ProxyArgs is the `create` command line of the proxy container. It holds
// no secret: the token is in a session file (sessionfiles.go).
func (s *Session) ProxyArgs() []string { return s.plan.Proxy.args(s.filesDir, s.owner, s.plan.podman) }

// egressNetwork is the network the proxy joins: "" for the engine's default
// network (no --network flag: docker's bridge, podman's own default), the
// session's own network, or the one named.
//
// The engine's default network is the default because the agent joins no
// network. A session network of its own adds a bridge and its firewall
// rules, made at every start and removed at every end, and only keeps the
// proxy apart from the user's other containers — which the proxy cannot
// reach anyway unless the policy's allow_private opens their addresses,
// and which cannot reach it: it listens on no network port, only on the
// socket in the session's volume.
func (s *Session) egressNetwork() string { return s.plan.Proxy.Network }

// ExitStopped is the exit code of a `hobbs run` whose session `hobbs stop`
// ended: 128+SIGTERM, the status a command ended by SIGTERM has, and what
// the stop sends the agent's command (docs/cli.md).
const ExitStopped = 143

// stoppedError is the error of a session that `hobbs stop` ended.
func (s *Session) stoppedError() error {
	return &errs.Error{Code: ExitStopped, Msg: fmt.Sprintf("session %s stopped by hobbs stop", s.Name)}
}

// stopped reports whether `hobbs stop` has marked this session (records.go).
func (s *Session) stopped() bool { return stopMarked(s.Instance, s.Name, s.owner) }

// reservedEnv are variables the launcher sets; a vault mapping may not
// override them.
var reservedEnv = map[string]bool{"HOME": true, "USER": true, "PATH": true, "HOBBS_HOME": true, "HOBBS_CONTEXT": true,
	"HTTP_PROXY": true, "HTTPS_PROXY": true, "http_proxy": true, "https_proxy": true, "NO_PROXY": true,
	"no_proxy": true, "ALL_PROXY": true, "all_proxy": true, "CLAUDE_CONFIG_DIR": true,
	"SSL_CERT_FILE": true, "CURL_CA_BUNDLE": true, "REQUESTS_CA_BUNDLE": true, "GIT_SSL_CAINFO": true, "NODE_EXTRA_CA_CERTS": true}

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

// proxyURL is what the agent's proxy variables hold: the relay in its own
// container (it has no other network), which forwards to the proxy's socket.
func (s *Session) proxyURL() string {
	return "http://" + TokenUser + ":" + s.token + "@" + RelayAddr
}

func (s *Session) claudeLabels() []string {
	return []string{"--label", LabelRole + "=" + RoleClaude, "--label", LabelInstance + "=" + InstanceID(s.Instance)}
}

// mountsCreateVolumes reports whether the engine creates a missing volume
// that a container's --mount names, with the driver options and labels the
// mount gives (Docker). The session's volumes then need no `volume create`
// of their own: two engine calls, each a CLI process, fewer at every
// start. Podman's --mount takes neither options nor labels: there the
// launcher creates them first.
func (s *Session) mountsCreateVolumes() bool { return !s.plan.podman }

// claudeVolume is the name of the Claude state volume the agent mounts.
func (s *Session) claudeVolume() string {
	for _, m := range s.plan.Agent.Mounts {
		if m.Target == ClaudeDir {
			return m.Source
		}
	}
	return ""
}

// AgentEnv is the agent's session variables: the proxy variables (holding
// the token), the env: secrets and the placeholders of bound secrets. They
// reach the agent's command through the session file SessionEnvFile, never
// its container's configuration.
func (s *Session) AgentEnv() []string {
	u := s.proxyURL()
	env := []string{"HTTP_PROXY=" + u, "HTTPS_PROXY=" + u, "http_proxy=" + u, "https_proxy=" + u}
	env = append(env, s.Secrets...)
	for _, b := range s.Bindings {
		env = append(env, b.Name+"="+b.Placeholder)
		if b.SecretPlaceholder != "" {
			env = append(env, policy.AWSSecretKeyVar+"="+b.SecretPlaceholder)
		}
	}
	return env
}

// Run runs the session to its end and returns the agent command's exit
// code. Whatever it created is removed before it returns, also when ctx is
// cancelled (Ctrl-C, SIGTERM): the exit code is then 130.
//
// Start-up is a pipeline of engine calls, each begun as soon as what it
// needs exists: the egress network, the socket volume and the state volume
// at once (while leftovers of crashed sessions are removed); then both
// containers are created, and both started together. The agent's entry
// point starts its relay to the proxy's socket, which holds connections
// until the proxy answers, and runs the command at once; the launcher stops
// the agent if the proxy fails to become healthy or dies. The instance's
// policy is checked first, on the host: a policy the proxy would refuse
// ends the session before anything is created.
func (s *Session) Run(ctx context.Context) (code int, err error) {
	if err := ValidName(s.Name); err != nil {
		return 0, err
	}
	if err := CheckPolicy(s.Instance); err != nil {
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
	if s.plan == nil {
		return 0, errs.Failf("internal: session %s has no plan", s.Name)
	}
	release, err := s.claimWorkspace(claimsDir(), s.workspace, s.gitCovered)
	if err != nil {
		return 0, err
	}
	if err := s.writeSessionFiles(); err != nil {
		s.removeSessionFiles()
		release()
		return 0, err
	}
	e := s.Engine
	engine.Tracef("session: setup")
	// The session's note (records.go), before anything exists to be left.
	// Without one, every later run looks for leftovers.
	recorded, _ := record(s.Instance, s.Name, s.owner)
	// The shares are neutralised and the session's provenance record
	// begins while its objects are created; the agent starts only once
	// both are done. Their ends are deferred before the cleanup, so they
	// run after it: once the containers are gone and the proxy's audit is
	// complete (the cleanup starts both once the agent's container is gone
	// and the proxy has stopped: afterAgent).
	if s.Provenance != nil || s.Neutralise != nil {
		s.began = spawn(s.begin)
		defer func() {
			if <-s.began.done; s.began.err == nil && s.Provenance != nil {
				s.endProvenance()
			}
			s.neutraliseEnd()
		}()
	}

	// Leftovers of crashed sessions of this instance are removed meanwhile
	// (when a note says there may be some); a name clash waits for that
	// removal before it counts (the leftover may have held the name).
	reaped := make(chan struct{})
	go func() {
		defer close(reaped)
		others, dead := otherRecords(s.Instance, s.Name)
		if !others {
			return
		}
		if _, err := ReapOrphans(ctx, e, s.Instance); err != nil {
			if engine.Unreachable(err) != nil {
				return // the session's own calls report it
			}
			s.Progress("warning: could not remove leftovers of earlier sessions: %v", err)
			return
		}
		// Whatever those launchers left is gone now (also where they had
		// not created anything yet).
		for _, n := range dead {
			unrecord(s.Instance, n)
		}
	}()
	defer func() {
		engine.Tracef("session: cleanup")
		cerr := s.cleanup()
		s.removeSessionFiles()
		release()
		// A stop removes what is left of the session itself; its removal
		// and this cleanup may refuse each other's objects meanwhile.
		stopped := s.stopped()
		if cerr != nil && err == nil && !stopped {
			err = cerr
		}
		if (cerr == nil || stopped) && recorded {
			unrecord(s.Instance, s.Name)
		}
		unmarkStopped(s.Instance, s.Name, s.owner)
		<-reaped
		engine.Tracef("session: cleanup done")
		if ctx.Err() != nil {
			code, err = errs.Interrupted, &errs.Error{Code: errs.Interrupted, Msg: "interrupted"}
		}
	}()
	created := make(chan struct{})
	ev, err := s.watch(ctx, created)
	if err != nil {
		return 0, err
	}
	s.ev = ev
	err = s.create(ctx, reaped)
	close(created)
	if u := engine.Unreachable(err); u != nil {
		// One message for every call that failed the same way.
		return 0, u
	}
	if err != nil {
		return 0, err
	}
	engine.Tracef("session: created")
	if s.began != nil {
		if <-s.began.done; s.began.err != nil {
			return 0, s.began.err
		}
	}
	proxyStart := make(chan error, 1)
	go func() { proxyStart <- s.startProxy(ctx) }()
	if err := s.seedClaude(ctx); err != nil {
		<-proxyStart
		return 0, err
	}
	var agent *agentRun
	if s.ReadyFile != "" {
		agent, err = s.awaitAgent(ev)
	} else {
		agent, err = s.startAgent(ctx)
	}
	if err != nil {
		<-proxyStart
		return 0, err
	}
	engine.Tracef("session: agent started")
	// The launcher's own check of the proxy's health (the agent's entry point
	// makes its own before the command runs). It no longer matters once the
	// agent has ended.
	hctx, stopHealth := context.WithCancel(ctx)
	defer stopHealth()
	healthy := make(chan error, 1)
	go func() {
		err := <-proxyStart
		if err == nil {
			err = s.waitProxy(hctx, ev.proxyDied)
			engine.Tracef("session: proxy healthy: %v", err)
		}
		healthy <- err
	}()

	// The engine reports the agent's death well before `docker start`
	// returns (it first detaches the container from its network): the
	// proxy's removal starts then, which takes that time off the way out.
	agentDied, proxyDied, up := ev.agentDied, ev.proxyDied, false
	for {
		select {
		case res := <-agent.done:
			s.agentEnded = true
			if s.stopped() {
				return 0, s.stoppedError()
			}
			select {
			case <-proxyDied: // died first, and not removed by us
				if s.proxyStop == nil {
					return 0, s.proxyFailed("it exited during the session")
				}
			default:
			}
			return agent.result(res)
		case err := <-healthy:
			healthy = nil
			if err != nil && hctx.Err() == nil {
				if s.stopped() {
					agent.wait(s)
					return 0, s.stoppedError()
				}
				agent.kill(s)
				return 0, err
			}
			up = err == nil
		case <-agentDied:
			agentDied = nil
			stopHealth()
			s.stopProxyEarly()
		case <-proxyDied:
			proxyDied = nil
			if s.proxyStop != nil {
				continue // our own stop
			}
			if s.stopped() {
				agent.wait(s)
				return 0, s.stoppedError()
			}
			agent.kill(s)
			if !up {
				return 0, s.proxyFailed("it exited at start (its output below; /home/dev/.hobbs is your instance directory)")
			}
			return 0, s.proxyFailed("it exited during the session")
		case <-ctx.Done():
			return agent.stop(s), nil
		}
	}
}

// CheckPolicy parses the instance's policy.yaml as the session's proxy will:
// an error (file:line) is the user's to fix, before a session starts.
func CheckPolicy(in instance.Instance) error {
	if _, err := in.FS().Stat(in.Policy()); err != nil {
		return errs.Missingf("the instance's policy: %v", err).
			WithHint("the egress proxy needs it: run hobbs init to create it")
	}
	if _, err := policy.ParseFile(in.Policy()); err != nil {
		return (&errs.Error{Code: errs.Code(err), Msg: "the egress policy is invalid; the proxy would not start: " + err.Error()}).
			WithHint("fix %s (hobbs policy show checks it)", in.Policy())
	}
	return nil
}

// future is the result of a function running in its own goroutine.
type future struct {
	done chan struct{}
	err  error
}

func spawn(f func() error) *future {
	ft := &future{done: make(chan struct{})}
	go func() {
		defer close(ft.done)
		ft.err = f()
	}()
	return ft
}

func (f *future) wait() error {
	<-f.done
	return f.err
}

// create makes the session's network, volumes and containers, each engine
// call begun as soon as what it needs exists. The containers are created
// while Prepare checks the image, from the image as it is (never pulled); if
// Prepare then builds or pulls it (or it was missing), they are removed and
// made again.
func (s *Session) create(ctx context.Context, reaped <-chan struct{}) error {
	e := s.Engine
	if err := CheckSecretNames(s.Secrets); err != nil {
		return err
	}
	var changed bool
	prepared := spawn(func() error {
		if s.Prepare == nil {
			return nil
		}
		var err error
		changed, err = s.Prepare(ctx)
		return err
	})
	egress := spawn(func() error {
		if s.egressNetwork() != EgressNetwork(s.Name) {
			return nil // the engine's default network or the user's own
		}
		return s.createNetwork(ctx, "egress", EgressNetwork(s.Name), reaped)
	})
	volume := spawn(func() error {
		if s.mountsCreateVolumes() || s.claudeVolume() == "" {
			return nil // the agent's create does, or a run has its own state
		}
		// Podman refuses to create a volume that exists (Docker hands it
		// over): the state volume exists from the second session on.
		args := append([]string{"volume", "create"}, s.claudeLabels()...)
		_, err := e.Output(ctx, append(args, s.claudeVolume())...)
		if err != nil && isClash(err) {
			return nil
		}
		return err
	})
	err := s.createRunVolume(ctx)
	if err == nil {
		err = s.createContainers(ctx, egress, reaped)
	}
	if perr := prepared.wait(); perr != nil {
		egress.wait()
		volume.wait()
		return perr // the cause; the rest follows from it
	}
	if (err != nil || changed) && errs.Code(err) != errs.Usage && engine.Unreachable(err) == nil {
		// Made from an image that is gone or was missing: again, from the
		// one Prepare made. (A name in use is the user's to fix.)
		engine.Tracef("session: creating the containers again (the image was built or pulled, or a create failed)")
		if err = s.removeContainers(ctx); err == nil {
			err = s.createContainers(ctx, egress, reaped)
		}
	}
	return errors.Join(err, egress.wait(), volume.wait())
}

// createContainers creates the agent and, once its network exists, the
// proxy.
func (s *Session) createContainers(ctx context.Context, egress *future, reaped <-chan struct{}) error {
	return parallel(
		func() error {
			id, err := s.createContainer(ctx, "agent", s.Name, nil, s.AgentArgs(), reaped)
			s.agentID = id
			return err
		},
		func() error {
			if egress.wait() != nil {
				return nil // reported by create
			}
			id, err := s.createContainer(ctx, "proxy", ProxyName(s.Name), nil, s.ProxyArgs(), reaped)
			s.proxyID = id
			return err
		})
}

// removeContainers removes the containers createContainers made (by id:
// a name may be another's).
func (s *Session) removeContainers(ctx context.Context) error {
	var ids []string
	for _, id := range []*string{&s.agentID, &s.proxyID} {
		if *id != "" {
			ids = append(ids, *id)
			*id = ""
		}
	}
	if len(ids) == 0 {
		return nil
	}
	_, err := s.Engine.Output(ctx, append([]string{"rm", "-f"}, ids...)...)
	if err != nil && !engine.IsNotFound(err) {
		return err
	}
	return nil
}

// createRunVolume creates the session's socket volume (runMount) where the
// engine's --mount cannot. Where it can, the first of the two containers'
// creates makes it (a create that fails may have made it too): it counts as
// made from the start, and its removal tolerates its absence.
func (s *Session) createRunVolume(ctx context.Context) error {
	if s.mountsCreateVolumes() {
		s.made("run")
		return nil
	}
	args := append([]string{"volume", "create"}, s.labels(RoleRun)...)
	args = append(args, "--driver", "local", "--opt", "type=tmpfs", "--opt", "device=tmpfs",
		"--opt", "o=mode=1777", s.runVolume)
	_, err := s.Engine.Output(ctx, args...)
	if err == nil {
		s.made("run")
	}
	return err
}

// createNetwork creates network name (what: "egress"). A name clash counts
// only after leftovers are removed: then the network is not ours and
// stays.
func (s *Session) createNetwork(ctx context.Context, what, name string, reaped <-chan struct{}) error {
	args := append([]string{"network", "create"}, s.labels(RoleNetwork)...)
	args = append(args, name)
	var err error
	for try := 0; try < 2; try++ {
		if _, err = s.Engine.Output(ctx, args...); err == nil || !isClash(err) {
			// Made, or failed otherwise: any network of that name is ours.
			s.madeUnlessUnreachable(what, err)
			return err
		}
		<-reaped
	}
	return err
}

// createContainer creates container name (what: "agent" or "proxy") and
// returns its id. A name clash counts only after leftovers are removed: then
// the container is not ours and stays.
func (s *Session) createContainer(ctx context.Context, what, name string, env, args []string, reaped <-chan struct{}) (string, error) {
	var err error
	for try := 0; try < 2; try++ {
		var id string
		if id, err = s.output(ctx, env, args...); err == nil || !isClash(err) {
			s.madeUnlessUnreachable(what, err)
			return id, err
		}
		<-reaped
	}
	return "", errs.Usagef("a container named %s exists already", name).
		WithHint("choose another --name (hobbs ps lists the sessions)")
}

// output is Engine.Output with env (NAME=value pairs) added to the CLI's
// environment.
// A create whose arguments name SeccompSource gets the profile on its
// standard input.
func (s *Session) output(ctx context.Context, env []string, args ...string) (string, error) {
	seccomp := slices.Contains(args, "seccomp="+SeccompSource)
	if env == nil && !seccomp {
		return s.Engine.Output(ctx, args...)
	}
	cmd, err := s.Engine.Command(ctx, env, args...)
	if err != nil {
		return "", err
	}
	if seccomp {
		cmd.Stdin = bytes.NewReader(SeccompProfile())
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := engine.TraceCall(args)
	err = cmd.Run()
	done(err)
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", s.Engine.CallError(args[0], msg)
	}
	return strings.TrimSpace(stdout.String()), nil
}

// isClash reports an engine error about a name in use.
func isClash(err error) bool {
	m := strings.ToLower(err.Error())
	return strings.Contains(m, "already in use") || strings.Contains(m, "already exists")
}

// events are what the launcher learns from the engine's event stream.
type events struct {
	proxyDied <-chan struct{}
	agentDied <-chan struct{}
	agentGone <-chan struct{} // the agent was removed
}

// eventLine is one `events --format '{{json .}}'` line: Docker's fields,
// and podman's (ID, Status).
type eventLine struct {
	Type   string
	Action string
	Status string
	ID     string
	Actor  struct {
		ID         string
		Attributes map[string]string
	}
}

// event is what the launcher needs of one engine event.
type event struct {
	died    bool   // a container died: id
	removed bool   // a container was removed: id
	id      string // the container that died or was removed
}

// parseEvent reads one `events --format '{{json .}}'` line, Docker's or
// podman's.
func parseEvent(line []byte) (event, bool) {
	var l eventLine
	if json.Unmarshal(line, &l) != nil {
		return event{}, false
	}
	action := l.Action
	if action == "" {
		action = l.Status
	}
	id := l.Actor.ID
	if id == "" {
		id = l.ID
	}
	switch {
	case strings.HasPrefix(action, "die") && l.Type == "container": // podman: died
		return event{died: true, id: id}, true
	case (action == "destroy" || action == "remove") && l.Type == "container": // podman: remove
		return event{removed: true, id: id}, true
	}
	return event{}, false
}

// watch follows the engine's events about the session's containers, whose
// ids are known once created is closed. It replays the last minute, so
// nothing that happened before the stream was up is missed (the containers'
// ids are new: older events cannot match). A stream that ends only means the
// launcher learns of deaths later (when `docker start` returns).
func (s *Session) watch(ctx context.Context, created <-chan struct{}) (*events, error) {
	pdied, adied, agone := make(chan struct{}), make(chan struct{}), make(chan struct{})
	ev := &events{proxyDied: pdied, agentDied: adied, agentGone: agone}
	cmd, err := s.Engine.Command(context.WithoutCancel(ctx), nil, "events", "--since", "60s",
		"--filter", "type=container", "--filter", "event=die", "--filter", "event=destroy", "--format", "{{json .}}")
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "watch engine events")
	}
	if err := cmd.Start(); err != nil {
		return nil, errs.Wrap(errs.Failure, err, "watch engine events")
	}
	s.events = cmd
	once := func(c chan struct{}, what string) {
		select {
		case <-c:
		default:
			engine.Tracef("session: event: %s", what)
			close(c)
		}
	}
	go func() {
		<-created
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			e, ok := parseEvent(sc.Bytes())
			switch {
			case !ok:
			case e.removed:
				if sameID(e.id, s.agentID) {
					once(agone, "agent removed")
				}
			case e.died:
				if sameID(e.id, s.agentID) {
					once(adied, "agent died")
				} else if sameID(e.id, s.proxyID) {
					once(pdied, "proxy died")
				}
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	return ev, nil
}

// sameID compares a full container id with one of the engine's (either may
// be abbreviated).
func sameID(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	return strings.HasPrefix(a, b) || strings.HasPrefix(b, a)
}

func (s *Session) rmContainer(ctx context.Context, name string) error {
	if _, err := s.Engine.Output(ctx, "rm", "-f", name); err != nil && !engine.IsNotFound(err) {
		return err
	}
	return nil
}

// stopProxy stops the proxy with SIGTERM: it closes what tunnels are left
// and writes every audit line before it exits. `rm -f` would kill it outright
// and lose the lines of tunnels still open or not yet written.
func (s *Session) stopProxy(ctx context.Context) error {
	_, err := s.Engine.Output(ctx, "stop", "--time", strconv.Itoa(proxyStopTime), ProxyName(s.Name))
	if err != nil && !engine.IsNotFound(err) {
		return err
	}
	return nil
}

// proxyStopped waits until the proxy has exited: stop (its stop's future)
// has returned or the engine has reported its death.
func (s *Session) proxyStopped(stop *future) error {
	var died <-chan struct{}
	if s.ev != nil {
		died = s.ev.proxyDied
	}
	select {
	case <-stop.done:
		return stop.err
	case <-died:
		return nil
	}
}

// stopProxyEarly starts stopping the proxy (the agent has died).
func (s *Session) stopProxyEarly() {
	if s.proxyStop == nil {
		s.proxyStop = spawn(func() error { return s.stopProxy(context.Background()) })
	}
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

// madeUnlessUnreachable records what as made unless err says the engine
// was not reached: a create that failed otherwise may have made it.
func (s *Session) madeUnlessUnreachable(what string, err error) {
	if engine.Unreachable(err) == nil {
		s.made(what)
	}
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

// startProxy starts the created proxy container.
func (s *Session) startProxy(ctx context.Context) error {
	if _, err := s.Engine.Output(ctx, "start", ProxyName(s.Name)); err != nil {
		if n := s.egressNetwork(); n != "" && n != EgressNetwork(s.Name) && engine.IsNotFound(err) &&
			strings.Contains(err.Error(), n) {
			// The engine checks a container's network only when it starts.
			return errs.Missingf("the egress network %s does not exist: %s", n, firstLine(err.Error())).
				WithHint("config.yaml's egress_network names it: create it (docker network create %s) or set egress_network: default", n)
		}
		return s.proxyFailed(firstLine(err.Error()))
	}
	return nil
}

// healthDelay is how long after the proxy's start the launcher first checks
// its health itself. The agent's entry point checks it before the command
// runs, and a proxy that exits is reported by the engine's events at once:
// the launcher's check (a `docker exec`, costly on a busy machine) only
// catches a proxy that runs but never answers, and is not needed at all
// when the agent ends first (scripts, tests).
const healthDelay = time.Second

// waitProxy waits until the started proxy answers its health check.
func (s *Session) waitProxy(ctx context.Context, died <-chan struct{}) error {
	e := s.Engine
	deadline := time.Now().Add(s.ProxyTimeout)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-died:
		return s.proxyFailed("it exited at start (its output below; /home/dev/.hobbs is your instance directory)")
	case <-time.After(healthDelay):
	}
	for {
		_, err := e.Output(ctx, "exec", ProxyName(s.Name), "hobbs", "proxy", "health", "--addr", "unix:"+ProxySocket)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		select {
		case <-died:
			return s.proxyFailed("it exited at start (its output below; /home/dev/.hobbs is your instance directory)")
		default:
		}
		if time.Now().After(deadline) {
			return s.proxyFailed(fmt.Sprintf("not healthy after %v: %s", s.ProxyTimeout, firstLine(err.Error())))
		}
		select {
		case <-died:
		case <-time.After(50 * time.Millisecond):
		}
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

// agentRun is the running `docker start --attach` of the agent.
type agentRun struct {
	cmd  *exec.Cmd
	done chan error
}

// startAgent starts the created agent container attached to our streams.
// Its entry point waits for the proxy before running the command.
func (s *Session) startAgent(ctx context.Context) (*agentRun, error) {
	args := []string{"start", "--attach", "--interactive", s.Name}
	if s.Detached {
		// The agent's input stays open for hobbs attach.
		args = []string{"start", "--attach", s.Name}
	}
	cmd, err := s.Engine.Command(context.WithoutCancel(ctx), nil, args...)
	if err != nil {
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = s.Stdin, s.Stdout, s.Stderr
	if err := cmd.Start(); err != nil {
		return nil, errs.Wrap(errs.Failure, err, "start agent")
	}
	a := &agentRun{cmd: cmd, done: make(chan error, 1)}
	go func() { err := cmd.Wait(); engine.Tracef("session: agent start returned"); a.done <- err }()
	return a, nil
}

// awaitAgent tells the process that starts the agent that it may
// (ReadyFile) and follows the agent by the engine's events: done once it
// died (its exit code is that process's to report).
func (s *Session) awaitAgent(ev *events) (*agentRun, error) {
	if err := safefile.Write(s.ReadyFile, []byte(s.Name+"\n"), 0o600); err != nil {
		return nil, errs.Wrap(errs.Failure, err, "ready file")
	}
	a := &agentRun{done: make(chan error, 1)}
	// A starter that never starts the agent (it was killed) must not leave
	// the session waiting: unstarted after agentStartWait, it is over.
	unstarted := make(chan struct{})
	go func() {
		deadline := time.Now().Add(agentStartWait)
		for time.Now().Before(deadline) {
			time.Sleep(500 * time.Millisecond)
			out, err := s.Engine.Output(context.Background(), "inspect", "--format", "{{.State.Status}}", s.Name)
			if err != nil || strings.TrimSpace(out) != "created" {
				return
			}
		}
		close(unstarted)
	}()
	go func() {
		select {
		case <-ev.agentDied:
		case <-ev.agentGone:
		case <-unstarted:
			s.Progress("the agent was not started within %v; ending the session", agentStartWait)
		}
		engine.Tracef("session: agent ended (events)")
		a.done <- nil
	}()
	return a, nil
}

// agentStartWait is how long a launcher with a ReadyFile waits for the
// agent to be started.
const agentStartWait = 60 * time.Second

// signal sends sig to the agent's command: through the docker CLI that
// started it, or the engine when another process did.
func (a *agentRun) signal(s *Session, sig syscall.Signal) {
	if a.cmd != nil {
		_ = a.cmd.Process.Signal(sig)
		return
	}
	_, _ = s.Engine.Output(context.Background(), "kill", "--signal", strconv.Itoa(int(sig)), s.Name)
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
	a.signal(s, syscall.SIGTERM)
	select {
	case <-a.done:
	case <-time.After(5 * time.Second):
		a.kill(s)
	}
	return errs.Interrupted
}

// wait waits for the agent to end (a stop is ending it), removing it when
// it has not within the stop's own timeout.
func (a *agentRun) wait(s *Session) {
	select {
	case <-a.done:
	case <-time.After((proxyStopTime + 5) * time.Second):
		a.kill(s)
	}
}

// kill removes the agent container and waits for the docker CLI to end.
func (a *agentRun) kill(s *Session) {
	_, _ = s.Engine.Output(context.Background(), "rm", "-f", s.Name)
	select {
	case <-a.done:
	case <-time.After(2 * time.Second): // the CLI may not notice a removed container
		if a.cmd == nil {
			return
		}
		_ = a.cmd.Process.Kill()
		<-a.done
	}
}

// cleanup removes what this run made (never the Claude state volume). The
// engine removed the agent when its command ended (--rm), unless the session
// ended otherwise; the proxy is stopped (SIGTERM: it writes its last audit
// lines), which may be under way already (stopProxyEarly). Once the agent is
// gone and the proxy stopped, the proxy is removed and, at the same time,
// the egress network (Docker removes a network that only stopped containers
// are attached to; an engine that refuses, podman, is asked again once the
// proxy is gone); the socket volume goes once both containers have.
func (s *Session) cleanup() error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	defer func() {
		if s.events != nil {
			_ = s.events.Process.Kill()
			_ = s.events.Wait()
		}
	}()
	none := spawn(func() error { return nil })
	agent, proxy := none, none
	if s.has("agent") && !s.agentRemoved() {
		agent = spawn(func() error { return s.removeAgent(ctx) })
	}
	if s.proxyStop != nil { // already on its way (the agent died)
		proxy = s.proxyStop
	} else if s.has("proxy") {
		proxy = spawn(func() error { return s.stopProxy(ctx) })
	}
	// The proxy can be removed once it has exited: the engine's die event
	// comes before `docker stop` returns.
	stopped := s.proxyStopped(proxy)
	// Once the engine has removed the agent, the shares are neutralised
	// and read for the provenance record's end while the proxy and the
	// rest are removed. Not sooner: the reading would slow the stop's
	// engine calls, whose end the session's end waits for anyway.
	if agent.wait() == nil {
		s.afterAgent()
	}
	if err := errors.Join(agent.wait(), stopped); err != nil {
		return err // the network and the volume are still in use
	}
	defer proxy.wait() // the stop's CLI, if it is still returning
	removed := none
	if s.has("proxy") {
		removed = spawn(func() error { return s.rmContainer(ctx, ProxyName(s.Name)) })
	}
	network := none
	if s.has("egress") {
		network = spawn(func() error {
			n := EgressNetwork(s.Name)
			if _, err := s.Engine.Output(ctx, "network", "rm", n); err == nil || engine.IsNotFound(err) {
				return nil
			}
			if removed.wait() != nil {
				return nil // reported below
			}
			if _, err := s.Engine.Output(ctx, "network", "rm", n); err != nil && !engine.IsNotFound(err) {
				return err
			}
			return nil
		})
	}
	err := removed.wait()
	if err == nil && s.has("run") {
		if _, verr := s.Engine.Output(ctx, "volume", "rm", s.runVolume); verr != nil && !engine.IsNotFound(verr) {
			err = verr
		}
	}
	return errors.Join(err, network.wait())
}

// removeAgent removes the agent container. The engine may be removing it
// already (--rm: its command ended while the session was being stopped), and
// refuses a second removal meanwhile: then the launcher waits for its
// destroy event, asking again now and then (the event stream may have
// ended), for removeAgentWait at most (engines word that refusal
// differently, so any error is retried until then).
func (s *Session) removeAgent(ctx context.Context) error {
	var gone <-chan struct{}
	if s.ev != nil {
		gone = s.ev.agentGone
	}
	ctx, cancel := context.WithTimeout(ctx, removeAgentWait)
	defer cancel()
	for {
		err := s.rmContainer(ctx, s.Name)
		if err == nil {
			return nil
		}
		if engine.Unreachable(err) != nil {
			return err // asking again would not help
		}
		select {
		case <-gone:
			return nil
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
			return err
		}
	}
}

const removeAgentWait = 10 * time.Second

// agentRemoved reports whether the engine has removed the agent container
// (its destroy event arrived). When its `start --attach` returned the
// command's status, the engine has removed it already, and the event is
// waited for a little.
func (s *Session) agentRemoved() bool {
	if s.ev == nil {
		return false
	}
	select {
	case <-s.ev.agentGone:
		return true
	default:
	}
	if !s.agentEnded {
		return false
	}
	select {
	case <-s.ev.agentGone:
		return true
	case <-time.After(250 * time.Millisecond):
		return false
	}
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
