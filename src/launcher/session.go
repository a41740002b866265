package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/hobbs-agent/hobbs/src/engine"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/plan"
	"github.com/hobbs-agent/hobbs/src/policy"
	"github.com/hobbs-agent/hobbs/src/provenance"
	"github.com/hobbs-agent/hobbs/src/userscope"
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
	// Bound are the secrets bound to hosts (config secrets:), their values
	// decrypted: the agent gets placeholders, the proxy the values
	// (sessionfiles.go). An aws-sigv4 binding is two, one of each part.
	Bound          []*policy.Secret
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
	// Ended, when set, gets the provenance record at the session's end.
	Ended func(provenance.Session)
	// Neutralise, when set, moves what host tools act on out of the
	// shares (neutralise, execute.go): with when "start" before the record
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
	sharesEnd        *future   // the shares' end, begun in the cleanup (startSharesEnd)
	seedGone         *future   // the seed container's removal, once read (seed.go)
	snap             *provenance.Snapshot
	layersMade       time.Time
	scopeBefore      *userscope.Listing // the Claude Code user scope at the start (userscope.go)
	scopeHelper      *future            // the helper container's create (userscope.go)
	scopeEnd         *future            // the end's reading of the user scope, into scopeAfter
	scopeAfter       *userscope.Listing
	scopeRemoved     *future     // the helper's removal
	scopeAsked       bool        // the proxy was asked to list the state volume at its stop (askScope)
	scopeRestored    bool        // the end wrote the user scope back (holdScope)
	lease            *scopeLease // the state volume's lease (scopelease.go)
	scopePrep        *future     // prepareScope, beside the objects' creation
	scopeKept        *userscope.Listing
	scopeWrites      []provenance.ScopeWrite
	endAlone         bool // the end held the lease alone from its reading on
	othersAtStart    bool // notes of other sessions of the instance were there at the start

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

// AgentEnv is the agent's session variables (plan.Plan.AgentEnv): the proxy
// variables holding the token, the env: secrets' values and the
// placeholders of bound secrets. They reach the agent's command through
// the session file SessionEnvFile, never its container's configuration.
func (s *Session) AgentEnv() []string {
	values := envMap(s.Secrets)
	placeholders := map[string]string{}
	for _, b := range s.Bound {
		placeholders[b.Name] = b.Placeholder
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
	defer func() { s.lease.release() }() // after the shares' end, which settles it
	// The shares' end and the record's are deferred before the teardown,
	// so they end after it: once the containers are gone and the proxy's
	// audit is complete (the teardown begins them once the agent's
	// container is gone and the proxy has stopped: afterAgent,
	// startSharesEnd).
	if s.beginShares() {
		defer s.finishShares()
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
	if s.Provenance == nil && s.Neutralise == nil && !s.layered() {
		return false
	}
	s.began = spawn(s.begin)
	return true
}

// startSharesEnd begins a layered session's end of the shares while the
// cleanup removes the proxy and the rest: called once the agent is gone
// and the proxy has stopped; the merge waits for the layers' volumes'
// removal (layers).
func (s *Session) startSharesEnd(layers *future) {
	if s.began == nil || !s.layered() || s.sharesEnd != nil {
		return
	}
	s.sharesEnd = spawn(func() error { _ = layers.wait(); s.endShares(); return nil })
}

// finishShares waits for the shares' end begun in the cleanup, or ends
// them now.
func (s *Session) finishShares() {
	if s.sharesEnd != nil {
		_ = s.sharesEnd.wait()
		return
	}
	s.endShares()
}

// endShares ends what beginShares began: the provenance record (when it
// began) and the end's neutralising.
func (s *Session) endShares() {
	defer s.scopeDone()
	if <-s.began.done; s.began.err == nil && s.layered() {
		s.neutraliseEnd() // the layers' too: before they merge
		s.endLayers()
		return
	} else if s.began.err == nil && s.Provenance != nil {
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
	others, dead := otherRecords(s.Instance, s.Name)
	s.othersAtStart = others
	go func() {
		defer close(reaped)
		// The layers crashed sessions left, found while their notes say
		// so, held once their objects are gone (layers.go).
		defer s.holdLeftLayers(ctx, s.leftLayers())
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
	if s.sharesEnd != nil {
		// Merged or held before the note goes: a launcher killed meanwhile
		// leaves its note, and the next start finds the layer.
		_ = s.sharesEnd.wait()
	}
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
	s.scopePrep = spawn(s.prepareScope)
	err = s.create(ctx, reaped)
	if perr := s.scopePrepared(); err == nil {
		err = perr
	}
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
	if err := s.beginScope(ctx); err != nil {
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
			s.askScope()
			s.stopProxyEarly()
			// Nothing writes the state volume once the agent's processes
			// are gone: its reading starts now, not at the removal.
			s.endScope(ctx, true)
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

// made records that this run created what ("int", "egress", "proxy", "agent").
func (s *Session) made(what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.created == nil {
		s.created = map[string]bool{}
	}
	s.created[what] = true
}

// unmade records that what, made, was removed again.
func (s *Session) unmade(what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.created, what)
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

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// orDash is s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
