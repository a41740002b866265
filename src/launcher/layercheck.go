package launcher

import (
	"context"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hobbs-agent/hobbs/src/doctor"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/layer"
	"github.com/hobbs-agent/hobbs/src/plan"
)

// Kinds of the layers check.
const (
	CopyLayers    errs.Kind = "launcher.copy-layers"    // sessions' layers are copies ({why})
	OldKernelOver errs.Kind = "launcher.old-kernel"     // kernel {kernel} is older than overlay's userxattr (5.11)
	DesktopLayers errs.Kind = "launcher.desktop-layers" // Docker Desktop: overlay of host directories unknown
)

// DoctorLayers says how the sessions' private layers are made (plan.LayerMode):
// an overlay the engine mounts, or, where none can be, copies — the
// fallback, with what it costs and what it leaves out.
func DoctorLayers(ctx context.Context, env *doctor.Env) []doctor.Result {
	if os.Getenv("HOBBS_CONTEXT") == "container" {
		return nil
	}
	e := engineOf(env)
	mode := plan.LayerMode(env.Instance.Root, e.IsPodman())
	if mode == layer.Copy {
		why := "HOBBS_LAYERS=copy"
		switch {
		case e.IsPodman():
			why = "podman mounts no overlay volume without root"
		case os.Getenv(plan.EnvLayers) != string(layer.Copy):
			why = "the instance's path has a character overlay's options cannot carry"
		}
		return []doctor.Result{{Status: doctor.Warn,
			Message: "sessions' private layers are copies (" + why + "): each session copies memory, playbooks, skills, " +
				"agents and the task log at its start, and data/ is shared as it is, without a layer",
			Advice: errs.NewAdvice(CopyLayers, "why", why)}}
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		rel := unix.ByteSliceToString(u.Release[:])
		if kernelBefore(rel, 5, 11) {
			return []doctor.Result{{Status: doctor.Fail,
				Message: "sessions' private layers are overlays with userxattr, which kernel " + rel + " lacks (5.11 or later)",
				Advice:  errs.NewAdvice(OldKernelOver, "kernel", rel)}}
		}
	}
	if sys, err := e.Output(ctx, "info", "--format", "{{.OperatingSystem}}"); err == nil && strings.Contains(sys, "Docker Desktop") {
		return []doctor.Result{{Status: doctor.Warn,
			Message: "Docker Desktop's engine runs in a virtual machine: whether it mounts an overlay of the instance's directories is not known here",
			Advice:  errs.NewAdvice(DesktopLayers)}}
	}
	return []doctor.Result{{Status: doctor.OK, Message: "sessions' private layers: overlay volumes (the engine's local driver)"}}
}

// kernelBefore reports whether the kernel release rel ("6.1.0-18-amd64")
// is older than major.minor.
func kernelBefore(rel string, major, minor int) bool {
	var a, b int
	if n, _ := fmt.Sscanf(rel, "%d.%d", &a, &b); n < 2 {
		return false // not known: the session's mount says
	}
	return a < major || a == major && b < minor
}
