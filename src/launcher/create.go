package launcher

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strings"

	"github.com/hobbs-agent/hobbs/src/engine"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/plan"
)

// Creating a session's objects: its network, volumes and containers, each
// engine call begun as soon as what it needs exists.

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

// createContainers creates the agent, the user scope's helper (when the
// session has one) and, once its network exists, the proxy.
func (s *Session) createContainers(ctx context.Context, egress *future, reaped <-chan struct{}) error {
	if s.userScoped() {
		// Needed before the agent starts only when the start must read
		// the volume (no kept listing: prepareScope).
		s.scopeHelper = spawn(func() error {
			if s.scopePrepared() != nil || s.scopeKept != nil {
				return errHelperLater
			}
			return s.createScopeHelper(ctx)
		})
	}
	return parallel(
		func() error {
			if s.scopeHelper == nil {
				return nil
			}
			if err := s.scopeHelper.wait(); err != errHelperLater {
				return err
			}
			s.scopeHelper = nil
			return nil
		},
		func() error {
			if s.plan.Seed == nil {
				return nil
			}
			return s.createSeed(ctx, reaped)
		},
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

// errHelperLater: the user scope's helper is created once the agent starts.
var errHelperLater = errors.New("created later")

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
	if s.scopeHelper != nil {
		if s.scopeHelper.wait() == nil {
			ids = append(ids, s.scopeHelperName())
		}
		s.scopeHelper = nil
	}
	if s.plan.Seed != nil && s.has("seed") {
		ids = append(ids, s.plan.Seed.Name)
		s.unmade("seed")
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
// environment. A create whose arguments name SeccompSource gets the
// profile on its standard input.
func (s *Session) output(ctx context.Context, env []string, args ...string) (string, error) {
	var stdin io.Reader
	if slices.Contains(args, "seccomp="+plan.SeccompSource) {
		stdin = bytes.NewReader(plan.SeccompProfile())
	}
	return s.Engine.OutputWith(ctx, env, stdin, args...)
}

// isClash reports an engine error about a name in use.
func isClash(err error) bool {
	m := strings.ToLower(err.Error())
	return strings.Contains(m, "already in use") || strings.Contains(m, "already exists")
}
