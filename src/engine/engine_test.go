package engine

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hobbs-agent/hobbs/src/errs"
)

// fakeCLI writes a CLI that prints msg on stderr and exits 1.
func fakeCLI(t *testing.T, msg string) CLI {
	p := filepath.Join(t.TempDir(), "docker")
	if err := os.WriteFile(p, []byte("#!/bin/sh\necho '"+msg+"' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return New(p)
}

// TestUnreachable: a CLI that says it cannot reach its engine gives a
// Missing error (exit 3) with the fix, found through joins; any other
// failure stays a Failure.
func TestUnreachable(t *testing.T) {
	for _, msg := range []string{
		"Cannot connect to the Docker daemon at unix:///nonexistent.sock. Is the docker daemon running?",
		"permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock: Get ...",
		"Cannot connect to Podman. Please verify your connection to the Linux system using `podman system connection list`",
	} {
		c := fakeCLI(t, msg)
		_, err := c.Output(context.Background(), "ps", "-aq")
		if errs.Code(err) != errs.Missing || errs.AdviceOf(err).IsZero() || Unreachable(err) == nil {
			t.Errorf("%q: code %d advice %+v unreachable %v", msg, errs.Code(err), errs.AdviceOf(err), Unreachable(err) != nil)
		}
		joined := errors.Join(errs.Failf("other"), err)
		if u := Unreachable(joined); u == nil || errs.Code(u) != errs.Missing {
			t.Errorf("%q: not found in a join", msg)
		}
		if _, err := c.ServerVersion(context.Background()); errs.Code(err) != errs.Missing || errs.AdviceOf(err).IsZero() {
			t.Errorf("%q: ServerVersion: code %d %v", msg, errs.Code(err), err)
		}
	}
	_, err := fakeCLI(t, "Error: No such container: x").Output(context.Background(), "rm", "x")
	if errs.Code(err) != errs.Failure || Unreachable(err) != nil {
		t.Errorf("no such container: code %d %v", errs.Code(err), err)
	}
}

// TestNotFound: what docker and podman say of a missing object is a
// NotFoundError (podman 4.3's "image not known" included); other failures
// are not.
func TestNotFound(t *testing.T) {
	for _, msg := range []string{
		"Error: No such image: hobbs-runtime:latest",
		"Error: inspecting object: hobbs-runtime:latest: image not known",
		"Error: hobbs-runtime:latest: image not known",
		`Error: no container with name or ID "x" found: no such container`,
		`Error: no volume with name "v" found: no such volume`,
		"Error: unable to find network with name or ID n: network not found",
		"Error response from daemon: network n not found",
	} {
		_, err := fakeCLI(t, msg).Output(context.Background(), "image", "inspect", "x")
		if !IsNotFound(err) || errs.Code(err) != errs.Failure {
			t.Errorf("%q: not found %v, code %d", msg, IsNotFound(err), errs.Code(err))
		}
		ok, err := fakeCLI(t, msg).Exists(context.Background(), "image", "inspect", "x")
		if ok || err != nil {
			t.Errorf("%q: Exists = %v, %v", msg, ok, err)
		}
	}
	_, err := fakeCLI(t, "Error: readonly: invalid mount option").Output(context.Background(), "create")
	if IsNotFound(err) {
		t.Errorf("invalid mount option is not a missing object: %v", err)
	}
}

// TestNoInit: podman without catatonit fails --init with a Missing error
// that names the package, from Output and from Stream.
func TestNoInit(t *testing.T) {
	msg := "Resource limits are not supported and ignored on cgroups V1 rootless systems\n" +
		"Error: container-init binary not found on the host: stat /usr/libexec/podman/catatonit: no such file or directory"
	c := fakeCLI(t, msg)
	c.Bin = filepath.Join(filepath.Dir(c.Bin), "podman")
	if err := os.Rename(filepath.Join(filepath.Dir(c.Bin), "docker"), c.Bin); err != nil {
		t.Fatal(err)
	}
	_, err := c.Output(context.Background(), "create", "--init", "img")
	if errs.Code(err) != errs.Missing || errs.AdviceOf(err).Kind != NoInit || IsNotFound(err) ||
		!strings.HasSuffix(err.Error(), "--init: Error: container-init binary not found on the host: stat /usr/libexec/podman/catatonit: no such file or directory") {
		t.Errorf("Output: code %d advice %+v: %v", errs.Code(err), errs.AdviceOf(err), err)
	}
	err = c.Stream(context.Background(), io.Discard, nil, "run", "--init", "img")
	if errs.Code(err) != errs.Missing || errs.AdviceOf(err).Kind != NoInit {
		t.Errorf("Stream: code %d advice %+v: %v", errs.Code(err), errs.AdviceOf(err), err)
	}
}

// TestPathAdvice: a CLI that is not there gets the advice that fits the
// name: an unknown name is a setting to correct, never "install Docker".
func TestPathAdvice(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for bin, want := range map[string]errs.Kind{
		"dokcer":          UnknownEngine,
		"docker":          NoDocker,
		"podman":          NoPodman,
		"/nowhere/docker": NoExecutable,
	} {
		_, err := New(bin).Path()
		if a := errs.AdviceOf(err); errs.Code(err) != errs.Missing || a.Kind != want {
			t.Errorf("%s: code %d advice %+v, want %s", bin, errs.Code(err), a, want)
		}
	}
	_, err := New("dokcer").Path()
	if f := errs.AdviceOf(err).Facts; f["bin"] != "dokcer" || f["known"] != "docker or podman" {
		t.Errorf("unknown engine: facts %v", f)
	}
}

// TestUnreachableAdviceNamesTheSetting: when DOCKER_HOST, DOCKER_CONTEXT
// or the CLI's current context chose the engine, the advice names it;
// starting the local engine is the fix only when none did.
func TestUnreachableAdviceNamesTheSetting(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("DOCKER_CONFIG", "")
	t.Setenv("DOCKER_CONTEXT", "")
	t.Setenv("DOCKER_HOST", "")
	t.Setenv("CONTAINER_HOST", "")
	docker, podman := New("docker"), New("podman")
	is := func(a errs.Advice, k errs.Kind, fact, value string) bool {
		return a.Kind == k && (fact == "" || a.Facts[fact] == value)
	}
	if a := docker.UnreachableAdvice(); !is(a, DockerUnreachable, "", "") {
		t.Errorf("no setting: %+v", a)
	}

	t.Setenv("DOCKER_HOST", "unix:///nonexistent.sock")
	if a := docker.UnreachableAdvice(); !is(a, DockerHostUnreachable, "host", "unix:///nonexistent.sock") {
		t.Errorf("DOCKER_HOST: %+v", a)
	}
	t.Setenv("DOCKER_HOST", "")

	// The CLI's config.json names a context; DOCKER_CONTEXT wins over it;
	// "default" is the local engine.
	if err := os.MkdirAll(filepath.Join(home, ".docker"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".docker", "config.json"), []byte(`{"auths": {}, "currentContext": "remote-box"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if a := docker.UnreachableAdvice(); !is(a, ContextUnreachable, "context", "remote-box") {
		t.Errorf("config.json's context: %+v", a)
	}
	t.Setenv("DOCKER_CONTEXT", "other")
	if a := docker.UnreachableAdvice(); !is(a, ContextUnreachable, "context", "other") {
		t.Errorf("DOCKER_CONTEXT: %+v", a)
	}
	t.Setenv("DOCKER_CONTEXT", "default")
	if a := docker.UnreachableAdvice(); !is(a, DockerUnreachable, "", "") {
		t.Errorf("the default context: %+v", a)
	}
	t.Setenv("DOCKER_CONTEXT", "")

	// Podman: CONTAINER_HOST, never docker's settings or systemctl.
	t.Setenv("DOCKER_HOST", "tcp://elsewhere:2375")
	if a := podman.UnreachableAdvice(); !is(a, PodmanUnreachable, "", "") {
		t.Errorf("podman: %+v", a)
	}
	t.Setenv("CONTAINER_HOST", "ssh://me@box/run/podman.sock")
	if a := podman.UnreachableAdvice(); !is(a, PodmanHostUnreachable, "host", "ssh://me@box/run/podman.sock") {
		t.Errorf("CONTAINER_HOST: %+v", a)
	}
}
