package engine

import "github.com/hobbs-agent/hobbs/src/errs"

// The kinds of advice the engine's errors carry; cmd/hobbs words them
// (hints_engine.go). Facts: bin (the CLI as configured), known (the engine
// names Hobbs knows, joined), host (DOCKER_HOST or CONTAINER_HOST), context
// (the docker CLI's context).
const (
	UnknownEngine         errs.Kind = "engine.unknown-engine"
	NoPodman              errs.Kind = "engine.no-podman"
	NoExecutable          errs.Kind = "engine.no-executable"
	NoDocker              errs.Kind = "engine.no-docker"
	NoInit                errs.Kind = "engine.no-init"
	PodmanHostUnreachable errs.Kind = "engine.podman-host-unreachable"
	PodmanUnreachable     errs.Kind = "engine.podman-unreachable"
	DockerHostUnreachable errs.Kind = "engine.docker-host-unreachable"
	ContextUnreachable    errs.Kind = "engine.context-unreachable"
	DockerUnreachable     errs.Kind = "engine.docker-unreachable"
	NoServerVersion       errs.Kind = "engine.no-server-version"
)
