package launcher

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/hobbs-agent/hobbs/src/engine"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/layer"
	"github.com/hobbs-agent/hobbs/src/memory"
	"github.com/hobbs-agent/hobbs/src/plan"
	"github.com/hobbs-agent/hobbs/src/policy"
	"github.com/hobbs-agent/hobbs/src/provenance"
	"github.com/hobbs-agent/hobbs/src/userscope"
)

// A session's layers (src/layer, plan.Layers): made before the agent can
// start, out of every other session's and host command's sight while it
// runs, and at its end — once its agent and its proxy have stopped, so
// that the record of what it read is complete — merged into what is in
// effect when the session is untainted, held whole for review when it is
// tainted (provenance.EndLayer).

// layerWorkPool is where overlay work directories wait for their next
// session: overlayfs leaves root-owned entries in one that the user cannot
// remove, and empties it itself at its next mount.
var layerWorkPool = path.Join(plan.LayersDir, ".work")

// layerLowerPool is where ended sessions' snapshots wait, per share, for
// the next session to bring one up to date (layer.Recycle) rather than
// link every file anew; at most lowerPoolSize wait per share.
var layerLowerPool = path.Join(plan.LayersDir, ".lower")

const lowerPoolSize = 2

func (s *Session) layered() bool { return s.plan != nil && len(s.plan.Layers) > 0 }

// layerOf is the layer of lm.
func (s *Session) layerOf(lm plan.LayerMount) *layer.Layer {
	return &layer.Layer{Root: s.Instance.FS(), Share: lm.Share, Dir: lm.Dir, Work: path.Join(lm.Dir, "work"), Mode: lm.Mode}
}

// makeLayers makes the session's layers: each share's snapshot and an
// empty upper directory (a work directory from the pool when one waits).
func (s *Session) makeLayers() error {
	root := s.Instance.FS()
	engine.Tracef("layers: make")
	defer engine.Tracef("layers: made")
	for _, lm := range s.plan.Layers {
		l := s.layerOf(lm)
		if err := root.MkdirAll(l.Dir, 0o700); err != nil {
			return fmt.Errorf("the session's layer of %s: %w", lm.Share, err)
		}
		if lm.Mode == layer.Overlay {
			if ents, err := root.ReadDir(layerWorkPool); err == nil {
				for _, e := range ents {
					if root.Rename(path.Join(layerWorkPool, e.Name()), l.Work) == nil {
						break
					}
				}
			}
		}
		pool := path.Join(layerLowerPool, path.Base(lm.Dir))
		if ents, err := root.ReadDir(pool); err == nil {
			for _, e := range ents {
				if root.Rename(path.Join(pool, e.Name()), l.Lower()) == nil {
					break
				}
			}
		}
		if _, err := layer.Create(root, lm.Share, l.Dir, l.Work, lm.Mode); err != nil {
			return fmt.Errorf("the session's layer of %s: %w", lm.Share, err)
		}
	}
	s.layersMade = time.Now()
	return s.snapshotInstructions()
}

// removeLayerVolumes removes the overlay volumes (unmounting the layers)
// once the agent's container is gone, in one engine call.
func (s *Session) removeLayerVolumes(ctx context.Context) error {
	args := []string{"volume", "rm"}
	for _, lm := range s.plan.Layers {
		if lm.Volume != "" {
			args = append(args, lm.Volume)
		}
	}
	if len(args) == 2 {
		return nil
	}
	if _, err := s.Engine.Output(ctx, args...); err != nil && !engine.IsNotFound(err) {
		return err
	}
	return nil
}

// discardLayers removes the session's layers, their work directories back
// to the pool.
func (s *Session) discardLayers() {
	root := s.Instance.FS()
	for _, lm := range s.plan.Layers {
		l := s.layerOf(lm)
		if lm.Mode == layer.Overlay {
			if root.MkdirAll(layerWorkPool, 0o700) == nil {
				_ = root.Rename(l.Work, path.Join(layerWorkPool, s.Name+"-"+path.Base(lm.Dir)))
			}
		}
		pool := path.Join(layerLowerPool, path.Base(lm.Dir))
		if ents, err := root.ReadDir(pool); err == nil && len(ents) < lowerPoolSize || errors.Is(err, fs.ErrNotExist) {
			if root.MkdirAll(pool, 0o700) == nil {
				_ = l.Recycle(path.Join(pool, s.Name))
			}
		}
		if err := l.Discard(); err != nil {
			s.Progress("warning: the session's layer %s was not removed: %v", l.Dir, err)
		}
	}
	_ = root.RemoveAll(s.wsLayerDir())
	_ = root.RemoveAll(s.scopeLayerDir())
	_ = root.Remove(path.Join(plan.LayersDir, s.Name))
}

// endLayers merges or holds the session's layers and records its end.
func (s *Session) endLayers() {
	engine.Tracef("layers: end")
	defer engine.Tracef("layers: ended")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var scopeAfter *userscope.Listing
	var scope provenance.ScopeEnd
	defer func() { s.settleScope(scopeAfter) }()
	if s.userScoped() && s.scopeBefore != nil {
		l, err := s.scopeResult()
		if err != nil {
			s.Progress("warning: the Claude Code user scope on volume %s could not be read at the session's end: %v", s.claudeVolume(), err)
			scope.Unknown = err
		} else {
			scopeAfter = l
			scope.Wrote = wroteTranscripts(s.scopeBefore, l)
		}
	}
	merge := func(tainted bool, stamp string) (kept []string, hold []provenance.LayerChange, problems []string) {
		engine.Tracef("layers: merge")
		defer engine.Tracef("layers: merged")
		for _, lm := range s.plan.Layers {
			k, h, p := s.mergeLayer(s.layerOf(lm), tainted, stamp)
			kept, hold, problems = append(kept, k...), append(hold, h...), append(problems, p...)
		}
		if tainted {
			h, p := s.holdInstructions()
			hold, problems = append(hold, h...), append(problems, p...)
			if scopeAfter != nil {
				h, p := s.holdScope(ctx, scopeAfter)
				hold, problems = append(hold, h...), append(problems, p...)
			}
		}
		return kept, hold, problems
	}
	if s.Provenance == nil {
		_, _, problems := merge(false, "")
		for _, p := range problems {
			s.Progress("warning: %s", p)
		}
		s.discardLayers()
		return
	}
	pol := &policy.Policy{}
	if b, err := s.Instance.FS().ReadFile(s.Instance.Policy(), instance.MaxTextFile); err == nil {
		if p, err := policy.Parse(s.Instance.Policy(), b); err == nil {
			pol = p
		}
	}
	r, err := s.Provenance.EndLayerScope(s.Name, func(ses provenance.Session) ([]string, error) {
		return readsOf(s.Instance, ses)
	}, pol.Trusts, scope, merge)
	if err != nil {
		// The layers stay: nothing of them is lost, nothing takes effect.
		s.Progress("warning: the session's changes were neither merged nor held: %v (they stay in %s)", err, path.Join(plan.LayersDir, s.Name))
		return
	}
	s.discardLayers()
	for _, p := range r.Problems {
		s.Progress("warning: %s", p)
	}
	if len(r.Held) > 0 {
		why := strings.Join(r.Session.Why, ", ")
		if !r.Session.Tainted {
			why = "changed on both sides"
		}
		s.Progress("%s", word(s.Words, ChangesHeld, "session", s.Name, "why", why, "held", strconv.Itoa(len(r.Held))))
	} else if r.Waiting > 0 {
		s.Progress("%s", word(s.Words, ChangesWaiting, "waiting", strconv.Itoa(r.Waiting)))
	}
}

// mergeLayer merges one layer (untainted) or hands all its changes back to
// hold (tainted). What host tools act on (instance.HostTrusted), entries
// that are not regular files and the memory's own bookkeeping (its index
// and locks) are never taken.
func (s *Session) mergeLayer(l *layer.Layer, tainted bool, stamp string) (kept []string, hold []provenance.LayerChange, problems []string) {
	changes, err := l.Changes()
	if err != nil {
		return nil, nil, []string{fmt.Sprintf("the session's changes to %s could not be read: %v (left in %s)", l.Share, err, l.Dir)}
	}
	var take []layer.Change
	var paths []string
	for _, c := range changes {
		if why := leftOut(l.Share, c); why != "" {
			if why != "bookkeeping" {
				problems = append(problems, fmt.Sprintf("%s/%s: not taken from the session (%s)", l.Share, c.Path, why))
			}
			continue
		}
		take, paths = append(take, c), append(paths, c.Path)
	}
	if len(take) == 0 {
		return nil, nil, problems
	}
	root := s.Instance.FS()
	ours := layer.DirTree{Root: root, Dir: l.Share}
	holdOf := func(p string, theirs bool) provenance.LayerChange {
		c := provenance.LayerChange{Path: path.Join(l.Share, p)}
		if theirs {
			c.From = path.Join(l.Upper(), p)
		}
		if v, err := ours.Get(p); err == nil && v.Exists {
			sum := sha256.Sum256(v.Data)
			c.Base, c.BaseData = hex.EncodeToString(sum[:]), v.Data // review shows it
		}
		return c
	}
	if tainted {
		// Held whole, but for what every session's context load does to
		// the memories it loads (their last_accessed), which merges.
		var access []layer.Change
		for _, c := range take {
			if l.Share == "memory" && !c.Removed && accessOnly(l, c.Path) {
				access = append(access, c)
				continue
			}
			hold = append(hold, holdOf(c.Path, !c.Removed))
		}
		if len(access) == 0 {
			return nil, hold, problems
		}
		take, paths = access, nil
		for _, c := range access {
			paths = append(paths, c.Path)
		}
	}
	var outs []layer.Outcome
	if l.Share == "memory" {
		outs, err = memory.MergeLayer(root, l.Share, s.baseOf(l), l.Theirs(take), paths, stamp)
	} else {
		outs = layer.Trees(paths, s.baseOf(l), ours, l.Theirs(take), nil)
		err = layer.Apply(root, l.Share, outs)
	}
	if err != nil {
		problems = append(problems, fmt.Sprintf("merging the session's changes to %s: %v", l.Share, err))
	}
	removed := map[string]bool{}
	for _, c := range take {
		removed[c.Path] = c.Removed
	}
	for _, o := range outs {
		switch {
		case o.Conflict:
			// The layer's own record of the change says whether it holds a
			// file (a conflict read of a side may have failed first).
			c := holdOf(o.Path, !removed[o.Path])
			c.Why = "changed on both sides"
			hold = append(hold, c)
		case o.Changed:
			kept = append(kept, path.Join(l.Share, o.Path))
		}
	}
	return kept, hold, problems
}

// baseOf is what the layer started from: its snapshot, but for a file
// rewritten in place since it was taken (layer.BaseSince), which merges
// as a conflict.
func (s *Session) baseOf(l *layer.Layer) layer.Tree {
	if s.layersMade.IsZero() {
		return l.Base()
	}
	return l.BaseSince(s.layersMade)
}

// accessOnly reports whether the layer changed the memory file p in its
// last_accessed alone (memory.AccessOnly).
func accessOnly(l *layer.Layer, p string) bool {
	b, err1 := l.Base().Get(p)
	t, err2 := l.Theirs(nil).Get(p)
	return err1 == nil && err2 == nil && b.Exists && t.Exists && memory.AccessOnly(b.Data, t.Data)
}

// leftOut says why a change is not taken: "bookkeeping" for the memory's
// index and locks (the host keeps its own), else a reason to report.
func leftOut(share string, c layer.Change) string {
	if c.Bad != "" {
		return c.Bad
	}
	base := path.Base(c.Path)
	if base == ".lock" || strings.HasSuffix(base, ".lock") && share == "memory" ||
		share == "memory" && (c.Path == ".index" || strings.HasPrefix(c.Path, ".index/")) {
		return "bookkeeping"
	}
	for _, part := range strings.Split(c.Path, "/") {
		if why, ok := instance.HostTrusted[part]; ok {
			return "a " + part + ": " + why
		}
	}
	return ""
}
