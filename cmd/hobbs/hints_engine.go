package main

import (
	"strconv"

	"github.com/hobbs-agent/hobbs/src/engine"
	"github.com/hobbs-agent/hobbs/src/errs"
)

// engineHints words the advice of package engine: a CLI that is not there,
// an engine it cannot reach, podman without its init binary.
var engineHints = map[errs.Kind]words{
	engine.UnknownEngine: func(f errs.Facts) string {
		return strconv.Quote(f["bin"]) + " is not an engine Hobbs knows: set engine: in config.yaml (or HOBBS_DOCKER) to " +
			f["known"] + ", or to the CLI's path"
	},
	engine.NoPodman:     say("install podman and catatonit (Debian: sudo apt-get install podman catatonit), or set engine: docker in config.yaml"),
	engine.NoExecutable: say("no executable at {bin}: correct engine: in config.yaml (or HOBBS_DOCKER)"),
	engine.NoDocker:     say("install Docker Engine (https://docs.docker.com/engine/install/) or set engine: podman in config.yaml"),
	engine.NoInit: say("install catatonit (Debian, Ubuntu: sudo apt-get install catatonit; Fedora: sudo dnf install catatonit), " +
		"or set init_path in containers.conf to a catatonit or tini binary; hobbs doctor checks it"),
	engine.PodmanHostUnreachable: say("CONTAINER_HOST is set ({host}) and no engine answers there: correct it, " +
		"or unset it to use the local podman (unset CONTAINER_HOST); podman info checks"),
	engine.PodmanUnreachable: say("check that podman answers (podman info; on macOS: podman machine start)"),
	engine.DockerHostUnreachable: say("DOCKER_HOST is set ({host}) and no engine answers there: correct it, " +
		"or unset it to use the local engine (unset DOCKER_HOST); docker info checks"),
	engine.ContextUnreachable: func(f errs.Facts) string {
		return "the docker context " + strconv.Quote(f["context"]) + " is in use and its engine does not answer: start that engine, " +
			"or go back to the local one (docker context use default); docker context ls lists them"
	},
	engine.DockerUnreachable: say("start the engine (sudo systemctl start docker) and check you may use it (docker info)"),
	engine.NoServerVersion:   say("start the engine (sudo systemctl start docker)"),
}
