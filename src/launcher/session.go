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
	"github.com/hobbs-agent/hobbs/src/plan"
	"github.com/hobbs-agent/hobbs/src/provenance"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// Session is the executor of one plan (Execute): it creates, starts,
// follows and removes the session's objects. Everything it creates is
// described by its plan; its exported fields are what only the launcher's
// process knows: the engine, the streams, the secrets' values, and how
// the session is followed.
type Session struct {
	Engine   engine.CLI
	Instance instance.Instance
	Name     string // the plan's session
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

	// Secrets are NAME=value pairs of the plan's env: variables, decrypted.
	// They reach the agent in its session file (SessionEnvFile).
	Secrets []string
	// Bindings are the secrets bound to hosts (config secrets:): the agent
	// gets placeholders, the proxy the values (sessionfiles.go).
	Bindings       []Binding
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Progress       func(format string, args ...any)
	// Words words the launcher's notices (kinds.go) for Progress.
	Words func(errs.Advice) string

	// ProxyTimeout bounds the wait for the proxy to become healthy.
	ProxyTimeout time.Duration

	// Prepare, when set, makes sure the plan's image is current (Ensure:
	// the image check, a build or a pull) while the session's objects are
	// created — the containers among them, from the image as it is then,
	// which saves the check's time at every start. It reports whether it
	// changed what the image's name names (built or pulled it): the
	// containers are then made again. Its error ends the session (after
	// cleanup).
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
	proxyStop        *future   // the proxy's stop, once started early
	ev               *events   // what the engine's event stream told
	agentEnded       bool      // the agent's `start --attach` returned its status
	began            *future   // the start's Neutralise and the provenance record's begin
	neutralisedEnd   sync.Once // the end's Neutralise
	snapshot         *future   // the shares read once the agent is gone (provenance.go)
	snap             *provenance.Snapshot

	// plan is what the session carries out: its containers, mounts,
	// policy and command (plan.New).
	plan *plan.Plan

	// filesDir is the session's private directory on a tmpfs holding what
	// its containers get but the engine must not keep (sessionfiles.go).
	filesDir string
}

// AgentArgs is the `create` command line of the agent container (the
// plan's, with the session's files and owner). The engine removes it when
// its command ends (--rm): `start --attach` returns once it is gone, and no
// removal of the launcher's is left on the way out.
func (s *Session) AgentArgs() []string { return s.plan.Agent.CreateArgs(s.filesDir, s.owner) }

// ProxyArgs is the `create` command line of the proxy container. It holds
// no secret: the token is in a session file (sessionfiles.go).
func (s *Session) ProxyArgs() []string { return s.plan.Proxy.CreateArgs(s.filesDir, s.owner) }

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

// labelFlags are the --label flags of the session's object of role (the
// plan's labels, with this launcher as the owner).
func (s *Session) labelFlags(role string) []string {
	var f []string
	for _, l := range plan.Labels(s.Name, plan.InstanceID(s.Instance), s.owner, role, s.plan.Workspace) {
		f = append(f, "--label", l)
	}
	return f
}

// mountsCreateVolumes reports whether the engine creates a missing volume
// that a container's --mount names, with the driver options and labels the
// mount gives (Docker). The session's volumes then need no `volume create`
// of their own: two engine calls, each a CLI process, fewer at every
// start. Podman's --mount takes neither options nor labels: there the
// launcher creates them first.
func (s *Session) mountsCreateVolumes() bool { return !s.plan.Podman }

// claudeVolume is the name of the Claude state volume the agent mounts.
func (s *Session) claudeVolume() string {
	for _, m := range s.plan.Agent.Mounts {
		if m.Target == plan.ClaudeDir {
			return m.Source
		}
	}
	return ""
}

// AgentEnv is the agent's session variables (plan.AgentEnv): the proxy
// variables holding the token, the env: secrets' values and the
// placeholders of bound secrets. They reach the agent's command through
// the session file SessionEnvFile, never its container's configuration.
func (s *Session) AgentEnv() []string {
	values := envMap(s.Secrets)
	placeholders := map[string]string{}
	for _, b := range s.Bindings {
		placeholders[b.Name] = b.Placeholder
		if b.SecretPlaceholder != "" {
			placeholders[config.AWSSecretKeyVar] = b.SecretPlaceholder
		}
	}
	return s.plan.AgentEnv(s.token, func(e plan.EnvSecret) string { return values[e.Name] },
		func(n string) string { return placeholders[n] })
}

// Run runs the session to its end and returns the agent command's exit
// code. Whatever it created is removed before it returns, also when ctx is
// cancelled (Ctrl-C, SIGTERM): the exit code is then 130.
//
// Its steps: the host's side first (setUp: the workspace claimed, the
// session files written, the session noted), the shares' start and the
// provenance record begun meanwhile (beginShares); leftovers of crashed
// sessions removed meanwhile (reapLeftovers); the objects created
// (createObjects: a pipeline of engine calls, each begun as soon as what
// it needs exists); both containers started (start: the agent's entry
// point starts its relay to the proxy's socket, which holds connections
// until the proxy answers, and runs the command at once); the session
// followed to its end (follow: the launcher stops the agent if the proxy
// fails to become healthy or dies); then torn down (tearDown), and the
// shares' end and the record's after that (endShares). The plan was made
// with the instance's policy checked as the proxy will read it (PlanRun).
func (s *Session) Run(ctx context.Context) (code int, err error) {
	if s.plan == nil {
		return 0, errs.Failf("internal: session %s has no plan", s.Name)
	}
	if s.Progress == nil {
		s.Progress = func(string, ...any) {}
	}
	if s.ProxyTimeout == 0 {
		s.ProxyTimeout = 30 * time.Second
	}
	s.token = randHex(24)
	s.owner = Owner()
	release, recorded, err := s.setUp()
	if err != nil {
		return 0, err
	}
	// The shares' end and the record's are deferred before the teardown,
	// so they run after it: once the containers are gone and the proxy's
	// audit is complete (the teardown starts both once the agent's
	// container is gone and the proxy has stopped: afterAgent).
	if s.beginShares() {
		defer s.endShares()
	}
	reaped := s.reapLeftovers(ctx)
	defer func() { code, err = s.tearDown(ctx, code, err, release, recorded, reaped) }()
	ev, err := s.createObjects(ctx, reaped)
	if err != nil {
		return 0, err
	}
	agent, proxyStart, err := s.start(ctx, ev)
	if err != nil {
		return 0, err
	}
	engine.Tracef("session: agent started")
	return s.follow(ctx, ev, agent, proxyStart)
}

// setUp does the host's side of the start: the workspace claimed against
// other live sessions (workspace.go), the session files written
// (sessionfiles.go) and the session noted (records.go) before anything
// exists to be left — without a note, every later run looks for
// leftovers. release gives the workspace back.
func (s *Session) setUp() (release func(), recorded bool, err error) {
	release, err = s.claimWorkspace(claimsDir(), s.plan.Workspace, s.plan.WorkspaceGitReadOnly)
	if err != nil {
		return nil, false, err
	}
	if err := s.writeSessionFiles(); err != nil {
		s.removeSessionFiles()
		release()
		return nil, false, err
	}
	engine.Tracef("session: setup")
	recorded, _ = record(s.Instance, s.Name, s.owner)
	return release, recorded, nil
}

// beginShares neutralises the shares and begins the session's provenance
// record while its objects are created, when the session has either; the
// agent starts only once both are done. It reports whether it began.
func (s *Session) beginShares() bool {
	if s.Provenance == nil && s.Neutralise == nil {
		return false
	}
	s.began = spawn(s.begin)
	return true
}

// endShares ends what beginShares began: the provenance record (when it
// began) and the end's neutralising.
func (s *Session) endShares() {
	if <-s.began.done; s.began.err == nil && s.Provenance != nil {
		s.endProvenance()
	}
	s.neutraliseEnd()
}

// reapLeftovers removes leftovers of crashed sessions of this instance
// meanwhile, when a note says there may be some; the channel is closed
// once that is done. A name clash waits for it before it counts (the
// leftover may have held the name).
func (s *Session) reapLeftovers(ctx context.Context) <-chan struct{} {
	reaped := make(chan struct{})
	go func() {
		defer close(reaped)
		others, dead := otherRecords(s.Instance, s.Name)
		if !others {
			return
		}
		if _, err := ReapOrphans(ctx, s.Engine, s.Instance); err != nil {
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
	return reaped
}

// tearDown removes what the session made and its files, gives its
// workspace back and removes its note (when the cleanup succeeded or a
// stop removes the rest), and returns the session's code and error: the
// cleanup's error when the run had none, an interrupt's when ctx ended.
func (s *Session) tearDown(ctx context.Context, code int, err error, release func(), recorded bool, reaped <-chan struct{}) (int, error) {
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
	return code, err
}

// createObjects follows the engine's events and creates the session's
// objects (create); it returns once they exist and the shares' start is
// done.
func (s *Session) createObjects(ctx context.Context, reaped <-chan struct{}) (*events, error) {
	created := make(chan struct{})
	ev, err := s.watch(ctx, created)
	if err != nil {
		return nil, err
	}
	s.ev = ev
	err = s.create(ctx, reaped)
	close(created)
	if u := engine.Unreachable(err); u != nil {
		// One message for every call that failed the same way.
		return nil, u
	}
	if err != nil {
		return nil, err
	}
	engine.Tracef("session: created")
	if s.began != nil {
		if <-s.began.done; s.began.err != nil {
			return nil, s.began.err
		}
	}
	return ev, nil
}

// start starts the proxy and, once a headless run's sign-in is read
// (seedClaude), the agent — or, with a ReadyFile, lets another process
// start it. The proxy's start reports on proxyStart.
func (s *Session) start(ctx context.Context, ev *events) (*agentRun, <-chan error, error) {
	proxyStart := make(chan error, 1)
	go func() { proxyStart <- s.startProxy(ctx) }()
	if err := s.seedClaude(ctx); err != nil {
		<-proxyStart
		return nil, nil, err
	}
	var agent *agentRun
	var err error
	if s.ReadyFile != "" {
		agent, err = s.awaitAgent(ev)
	} else {
		agent, err = s.startAgent(ctx)
	}
	if err != nil {
		<-proxyStart
		return nil, nil, err
	}
	return agent, proxyStart, nil
}

// follow follows the running session to its end: the agent's end (its
// exit code), a stop, the proxy's failure to become healthy or its death
// (the agent is then killed), or ctx's end (the agent is stopped).
func (s *Session) follow(ctx context.Context, ev *events, agent *agentRun, proxyStart <-chan error) (int, error) {
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
		if s.egressNetwork() != plan.EgressNetwork(s.Name) {
			return nil // the engine's default network or the user's own
		}
		return s.createNetwork(ctx, "egress", plan.EgressNetwork(s.Name), reaped)
	})
	volume := spawn(func() error {
		if s.mountsCreateVolumes() || s.claudeVolume() == "" {
			return nil // the agent's create does, or a run has its own state
		}
		// Podman refuses to create a volume that exists (Docker hands it
		// over): the state volume exists from the second session on.
		args := []string{"volume", "create"}
		for _, l := range plan.StateLabels(plan.InstanceID(s.Instance)) {
			args = append(args, "--label", l)
		}
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
			id, err := s.createContainer(ctx, "proxy", plan.ProxyName(s.Name), nil, s.ProxyArgs(), reaped)
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
	if err != nil && !isNoSuch(err) {
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
	args := append([]string{"volume", "create"}, s.labelFlags(plan.RoleRun)...)
	args = append(args, "--driver", "local", "--opt", "type=tmpfs", "--opt", "device=tmpfs",
		"--opt", "o=mode=1777", s.plan.RunVolume)
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
	args := append([]string{"network", "create"}, s.labelFlags(plan.RoleNetwork)...)
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
	return "", errs.Usagef("a container named %s exists already", name).Advise(NameTaken)
}

// output is Engine.Output with env (NAME=value pairs) added to the CLI's
// environment.
// A create whose arguments name SeccompSource gets the profile on its
// standard input.
func (s *Session) output(ctx context.Context, env []string, args ...string) (string, error) {
	seccomp := slices.Contains(args, "seccomp="+plan.SeccompSource)
	if env == nil && !seccomp {
		return s.Engine.Output(ctx, args...)
	}
	cmd, err := s.Engine.Command(ctx, env, args...)
	if err != nil {
		return "", err
	}
	if seccomp {
		cmd.Stdin = bytes.NewReader(plan.SeccompProfile())
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
	if _, err := s.Engine.Output(ctx, "rm", "-f", name); err != nil && !isNoSuch(err) {
		return err
	}
	return nil
}

// proxyStopTime is how long (seconds) the engine waits for the proxy to
// exit after SIGTERM before it kills it. The proxy is stopped only once the
// agent is gone, so its tunnels have no client left; it is run with a short
// --grace (ProxyArgs) and exits well within this.
const proxyStopTime = 5

// stopProxy stops the proxy with SIGTERM: it closes what tunnels are left
// and writes every audit line before it exits. `rm -f` would kill it outright
// and lose the lines of tunnels still open or not yet written.
func (s *Session) stopProxy(ctx context.Context) error {
	_, err := s.Engine.Output(ctx, "stop", "--time", strconv.Itoa(proxyStopTime), plan.ProxyName(s.Name))
	if err != nil && !isNoSuch(err) {
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
	if _, err := s.Engine.Output(ctx, "start", plan.ProxyName(s.Name)); err != nil {
		if n := s.egressNetwork(); n != "" && n != plan.EgressNetwork(s.Name) && isNoSuch(err) &&
			strings.Contains(err.Error(), n) {
			// The engine checks a container's network only when it starts.
			return errs.Missingf("the egress network %s does not exist: %s", n, firstLine(err.Error())).
				Advise(NoEgressNetwork, "network", n)
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
		_, err := e.Output(ctx, "exec", plan.ProxyName(s.Name), "hobbs", "proxy", "health", "--addr", "unix:"+plan.ProxySocket)
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
	if c, err := s.Engine.Command(context.Background(), nil, "logs", "--tail", "20", plan.ProxyName(s.Name)); err == nil {
		if out, _ := c.CombinedOutput(); len(bytes.TrimSpace(out)) > 0 {
			msg += "\nproxy output:\n" + strings.TrimSpace(string(out))
		}
	}
	return errs.Failf("%s", msg).Advise(ProxyFailed)
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
		removed = spawn(func() error { return s.rmContainer(ctx, plan.ProxyName(s.Name)) })
	}
	network := none
	if s.has("egress") {
		network = spawn(func() error {
			n := plan.EgressNetwork(s.Name)
			if _, err := s.Engine.Output(ctx, "network", "rm", n); err == nil || isNoSuch(err) {
				return nil
			}
			if removed.wait() != nil {
				return nil // reported below
			}
			if _, err := s.Engine.Output(ctx, "network", "rm", n); err != nil && !isNoSuch(err) {
				return err
			}
			return nil
		})
	}
	err := removed.wait()
	if err == nil && s.has("run") {
		if _, verr := s.Engine.Output(ctx, "volume", "rm", s.plan.RunVolume); verr != nil && !isNoSuch(verr) {
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

// removeSession removes every container, network and volume labelled as
// session n.
func removeSession(ctx context.Context, e engine.CLI, n string) error {
	f := "label=" + LabelSession + "=" + n
	ids, err := e.Output(ctx, "ps", "-aq", "--filter", f)
	if err != nil {
		return err
	}
	if ids != "" {
		// Stopped first (SIGTERM): the proxy writes its last audit lines.
		stop := append([]string{"stop", "--time", strconv.Itoa(proxyStopTime)}, strings.Fields(ids)...)
		if _, err := e.Output(ctx, stop...); err != nil && !isNoSuch(err) {
			return err
		}
		if _, err := e.Output(ctx, append([]string{"rm", "-f"}, strings.Fields(ids)...)...); err != nil && !isNoSuch(err) {
			// The engine may be removing the agent itself (--rm, once
			// stopped) and refuses a second removal meanwhile: wait until
			// the containers are gone, or give the refusal.
			if !containersGone(ctx, e, f) {
				return err
			}
		}
	}
	if err := removeListed(ctx, e, "network", f); err != nil {
		return err
	}
	return removeListed(ctx, e, "volume", f)
}

// removeListed removes every object of kind (network or volume) that
// matches filter f.
func removeListed(ctx context.Context, e engine.CLI, kind, f string) error {
	ids, err := e.Output(ctx, kind, "ls", "-q", "--filter", f)
	if err != nil || ids == "" {
		return err
	}
	if _, err := e.Output(ctx, append([]string{kind, "rm"}, strings.Fields(ids)...)...); err != nil && !isNoSuch(err) {
		return err
	}
	return nil
}

// containersGone waits (10 s at most) until no container matches filter f.
func containersGone(ctx context.Context, e engine.CLI, f string) bool {
	deadline := time.Now().Add(10 * time.Second)
	for {
		left, err := e.Output(ctx, "ps", "-aq", "--filter", f)
		if err == nil && left == "" {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(200 * time.Millisecond)
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

// orDash is s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
