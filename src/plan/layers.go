package plan

import (
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/layer"
)

// Layers. Every share the agent writes that the host reads back (memory,
// playbooks, skills, agents, data, the task log) reaches the session
// through a private layer (src/layer): what the session writes is in its
// layer only, seen by no other session and no host command until the
// session's end merges it (untainted) or holds it for review (tainted).
// The layer's directories are host-only (LayersDir, which no session
// mounts); the agent mounts the layer where it would mount the share.

// LayersDir is the instance's directory of session layers (host-only).
const LayersDir = "layers"

// RoleLayer is the role label of a session's overlay volume.
const RoleLayer = "layer"

// LayerMount is one share's layer in a plan.
type LayerMount struct {
	Share string     `json:"share"` // relative to the instance
	Dir   string     `json:"dir"`   // the layer's directory, relative to the instance
	Mode  layer.Mode `json:"mode"`
	// Volume is the engine's overlay volume the agent mounts (Overlay).
	Volume string `json:"volume,omitempty"`
}

// layered reports whether a share reaches the agent through a layer, with
// mode: data is bound as it is where layers are copies (a copy of it at
// every start would cost what it weighs).
func layered(sh instance.Share, mode layer.Mode) bool {
	if !sh.Dir || sh.ReadOnly {
		return false
	}
	switch sh.Rel {
	case "memory", "playbooks", "skills", "agents", "logs/tasks":
		return true
	case "data":
		return mode == layer.Overlay
	}
	return false
}

// LayerDir is the directory of session's layer of share.
func LayerDir(session, share string) string {
	return path.Join(LayersDir, session, strings.ReplaceAll(share, "/", "-"))
}

// layerMount is the agent's mount of share through its layer, and the
// layer's entry.
func (p *Plan) layerMount(sh instance.Share, mode layer.Mode) (Mount, LayerMount) {
	lm := LayerMount{Share: sh.Rel, Dir: LayerDir(p.Session, sh.Rel), Mode: mode}
	target := InstanceDir + "/" + sh.Rel
	l := &layer.Layer{Root: p.instance.FS(), Share: sh.Rel, Dir: lm.Dir, Work: path.Join(lm.Dir, "work"), Mode: mode}
	if mode == layer.Copy {
		return Mount{Type: MountBind, Source: filepath.Join(p.Instance, filepath.FromSlash(l.Upper())), Target: target}, lm
	}
	lm.Volume = p.Session + "-layer-" + strings.ReplaceAll(sh.Rel, "/", "-")
	m := Mount{Type: MountVolume, Source: lm.Volume, Target: target}
	if !p.Podman {
		// volume-nocopy: the engine copies nothing of the image (and not
		// its owner) into the layer.
		m.Create = "volume-nocopy,volume-driver=local,volume-opt=type=overlay,volume-opt=device=overlay,\"volume-opt=o=" + l.MountOptions() + "\""
		m.Labels = Labels(p.Session, InstanceID(p.instance), shownOwner, RoleLayer, "")
	}
	return m, lm
}

// EnvLayers names the layer mechanism where the engine cannot mount an
// overlay of the instance's directories that Hobbs can detect (Docker
// Desktop, whose engine runs in a virtual machine): "copy".
const EnvLayers = "HOBBS_LAYERS"

// LayerMode is how a session's layers are made: an overlay the engine
// mounts (Docker Engine), else copies (podman, whose local volumes take
// no overlay options without root; an instance path that overlay's
// options cannot carry; HOBBS_LAYERS=copy).
func LayerMode(root string, podman bool) layer.Mode {
	if podman || strings.ContainsAny(root, ":,\"\\ ") || os.Getenv(EnvLayers) == string(layer.Copy) {
		return layer.Copy
	}
	return layer.Overlay
}
