package launcher

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
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
	engine.Tracef("layers: make")
	defer engine.Tracef("layers: made")
	if err := s.setAsideLeft(); err != nil {
		return err
	}
	// The workspace's instruction files are walked beside the snapshots
	// (a large workspace's first walk lists every directory).
	instructions := spawn(s.snapshotInstructions)
	if err := s.makeLayerDirs(); err != nil {
		_ = instructions.wait()
		return err
	}
	s.layersMade = time.Now()
	return instructions.wait()
}

// makeLayerDirs makes each layer's snapshot and empty upper directory.
func (s *Session) makeLayerDirs() error {
	root := s.Instance.FS()
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
	return nil
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

// sessionLayers are the session's layers.
func (s *Session) sessionLayers() []*layer.Layer {
	ls := make([]*layer.Layer, 0, len(s.plan.Layers))
	for _, lm := range s.plan.Layers {
		ls = append(ls, s.layerOf(lm))
	}
	return ls
}

// keptMark is the file in a layer directory (layers/NAME) that says an
// end kept the layers in it, for it could neither merge nor hold all of
// their changes (a share's lock taken too long, a write or read that
// failed): the next start holds them whole for review (leftLayers,
// holdLeft), as a dead launcher's. Its text is what failed.
const keptMark = ".kept"

// keep lists what an end keeps of the layers in layers/name: the
// directory of each layer whose merge or hold failed, and "" for the
// layer directory itself (a change that could not be held whose copy is
// in no share's layer: a workspace's instruction file, the user scope's).
type keep map[string]bool

// unheld adds to k the layers of ls holding the changes hold could not
// hold.
func (k keep) unheld(ls []*layer.Layer, unheld []provenance.LayerChange) {
	for _, c := range unheld {
		k[""] = true
		if c.Workspace != "" || c.Volume != "" {
			continue
		}
		for _, l := range ls {
			if strings.HasPrefix(c.Path, l.Share+"/") {
				k[l.Dir] = true
			}
		}
	}
}

// add records that l's merge failed.
func (k keep) add(l *layer.Layer) { k[""], k[l.Dir] = true, true }

// discardLayersOf removes the layers ls of session name and its layer
// directory: overlay work directories go to the pool (the user cannot
// remove what overlayfs left in them), snapshots to theirs while it has
// room. What k keeps stays, the directory marked (keptMark) with why,
// and the owner is told where.
func (s *Session) discardLayersOf(name string, ls []*layer.Layer, k keep, why []string) {
	root := s.Instance.FS()
	for _, l := range ls {
		if k[l.Dir] {
			next := ", and the next session's start holds them for review"
			if s.Provenance == nil {
				next = "" // nowhere to hold them (leftLayers)
			}
			s.Progress("warning: the session's changes to %s were neither all merged nor held: they stay in %s%s", l.Share, l.Dir, next)
			continue
		}
		if l.Mode == layer.Overlay {
			if root.MkdirAll(layerWorkPool, 0o700) == nil {
				_ = root.Rename(l.Work, path.Join(layerWorkPool, name+"-"+path.Base(l.Dir)))
			}
		}
		pool := path.Join(layerLowerPool, path.Base(l.Dir))
		if ents, err := root.ReadDir(pool); err == nil && len(ents) < lowerPoolSize || errors.Is(err, fs.ErrNotExist) {
			if root.MkdirAll(pool, 0o700) == nil {
				_ = l.Recycle(path.Join(pool, name))
			}
		}
		if err := l.Discard(); err != nil {
			s.Progress("warning: the session's layer %s was not removed: %v", l.Dir, err)
		}
	}
	dir := path.Join(plan.LayersDir, name)
	if k[""] {
		if err := root.Write(path.Join(dir, keptMark), []byte(strings.Join(why, "\n")+"\n"), 0o600); err != nil {
			s.Progress("warning: %s: %v", path.Join(dir, keptMark), err)
		}
		return
	}
	// What is left: the workspace's instruction files and the user
	// scope as the session started (wsinstr.go, userscope.go).
	_ = root.RemoveAll(dir)
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
		// How Claude Code was asked to start (a resume, a fork) and the
		// conversations it could have resumed.
		scope.Command = s.plan.Claude.Command
		for _, p := range s.scopeBefore.Paths() {
			if userscope.IsTranscript(p) {
				scope.Transcripts = append(scope.Transcripts, p)
			}
		}
		l, err := s.scopeResult()
		if err != nil {
			s.Progress("warning: the Claude Code user scope on volume %s could not be read at the session's end: %v", s.claudeVolume(), err)
			scope.Unknown = err
		} else {
			scopeAfter = l
			scope.Wrote = wroteTranscripts(s.scopeBefore, l)
		}
	}
	ls, k := s.sessionLayers(), keep{}
	merge := func(tainted bool, stamp string) (kept []string, hold []provenance.LayerChange, problems []string) {
		engine.Tracef("layers: merge")
		defer engine.Tracef("layers: merged")
		for _, l := range ls {
			kp, h, p, failed := s.mergeLayer(l, tainted, stamp, s.layersMade)
			kept, hold, problems = append(kept, kp...), append(hold, h...), append(problems, p...)
			if failed {
				k.add(l)
			}
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
		s.discardLayersOf(s.Name, ls, k, problems)
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
	for _, p := range r.Problems {
		s.Progress("warning: %s", p)
	}
	k.unheld(ls, r.Unheld)
	s.discardLayersOf(s.Name, ls, k, r.Problems)
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
// hold (tainted); made is when its snapshot was complete (baseOf). What host tools act on (instance.HostTrusted), entries
// that are not regular files and the memory's own bookkeeping (its index
// and locks) are never taken. failed says its changes could not be read
// or merged: the layer is to be kept (keep).
func (s *Session) mergeLayer(l *layer.Layer, tainted bool, stamp string, made time.Time) (kept []string, hold []provenance.LayerChange, problems []string, failed bool) {
	changes, err := l.Changes()
	if err != nil {
		return nil, nil, []string{fmt.Sprintf("the session's changes to %s could not be read: %v (left in %s)", l.Share, err, l.Dir)}, true
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
		return nil, nil, problems, false
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
			return nil, hold, problems, false
		}
		take, paths = access, nil
		for _, c := range access {
			paths = append(paths, c.Path)
		}
	}
	var outs []layer.Outcome
	if l.Share == "memory" {
		outs, err = memory.MergeLayer(root, l.Share, baseOf(l, made), l.Theirs(take), paths, stamp)
	} else {
		outs, err = s.mergeShare(l, baseOf(l, made), ours, take, paths)
	}
	if err != nil {
		problems = append(problems, fmt.Sprintf("merging the session's changes to %s: %v (left in %s)", l.Share, err, l.Dir))
		failed = true
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
	return kept, hold, problems, failed
}

// mergeShare merges the changes take (at paths) of layer l of a share
// other than the memory into what is in effect (ours), under the share's
// lock when it has one (instance.ShareLock): a host command writing the
// share at once would otherwise be overwritten by what was merged against
// the file before it (memory.MergeLayer takes the memory's).
func (s *Session) mergeShare(l *layer.Layer, base, ours layer.Tree, take []layer.Change, paths []string) ([]layer.Outcome, error) {
	root := s.Instance.FS()
	if lock, ok := s.Instance.ShareLock(l.Share); ok {
		if err := root.MkdirAll(filepath.Dir(lock), 0o755); err != nil {
			return nil, err
		}
		unlock, err := root.Lock(lock, shareLockWait)
		if err != nil {
			return nil, err
		}
		defer unlock()
	}
	outs := layer.Trees(paths, base, ours, l.Theirs(take), nil)
	return outs, layer.Apply(root, l.Share, outs)
}

// shareLockWait is how long a merge waits for a share's lock, which a
// host command or another session's end may hold (memory.MergeLayer
// waits as long).
const shareLockWait = 30 * time.Second

// baseOf is what the layer started from: its snapshot, but for a file
// rewritten in place since it was taken at made (layer.BaseSince), which
// merges as a conflict; made zero (not known): the snapshot.
func baseOf(l *layer.Layer, made time.Time) layer.Tree {
	if made.IsZero() {
		return l.Base()
	}
	return l.BaseSince(made)
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

// Layers a session left (its launcher was killed, or died, before the
// session's end; or its end could neither merge nor hold them, and kept
// them: keptMark): nothing of them took effect (a kept layer: perhaps
// part), and nothing of them may be lost. The next session's start
// (reapLeftovers) finds them in layers/, removes what the engine still
// holds of their session (its agent, if it outlived the launcher, and the
// overlay volumes), then holds each change set whole for review — what
// the session read is not known, so it counts as tainted; a kept layer's
// session's end failed, so it is not merged again — tells the owner, and
// removes the layer.

// leftWhy is how the owner is told why a left layer's changes wait;
// keptWhy, a kept layer's.
const (
	leftWhy = "(its launcher died)"
	keptWhy = "(its end could not merge them)"
)

// leftAge is how old a layer directory must be to count as left when
// nothing names its session's launcher as dead: no note (records.go) and
// no open provenance record. A session starting with another state
// directory (another HOME) makes its layers before its record opens, and
// its note is not in this launcher's directory.
const leftAge = 10 * time.Minute

// leftLayers lists the layer directories sessions of this instance left:
// each whose launcher a note or the open provenance record names as gone,
// each set aside by a session that took its name (setAsideLeft), each an
// end kept (keptMark), and each named by neither and older than leftAge (its end failed, or hobbs stop
// --all removed its note and a start ended its record). It runs before
// the leftovers' notes are removed.
func (s *Session) leftLayers() []string {
	if s.Provenance == nil {
		return nil // nowhere to hold them: they stay
	}
	ents, err := s.Instance.FS().ReadDir(plan.LayersDir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		dir := e.Name()
		if !e.IsDir() || strings.HasPrefix(dir, ".") || dir == s.Name {
			continue
		}
		if _, _, aside := strings.Cut(dir, leftMark); aside || s.keptAt(dir) || s.left(dir, e) {
			out = append(out, dir)
		}
	}
	return out
}

// keptAt reports whether the layer directory layers/dir is one an end
// kept (keptMark).
func (s *Session) keptAt(dir string) bool {
	_, err := s.Instance.FS().Lstat(path.Join(plan.LayersDir, dir, keptMark))
	return err == nil
}

// holdLeftLayers holds and removes the layers in the directories left
// (leftLayers), once the leftovers of their sessions are gone.
func (s *Session) holdLeftLayers(ctx context.Context, left []string) {
	for _, dir := range left {
		if n, _, aside := strings.Cut(dir, leftMark); aside {
			// Set aside by a session that took its name: its containers
			// have that name too, so they are not removed here; while
			// any is left, so is the layer (a later start holds it).
			if s.othersContainers(ctx, n) {
				continue
			}
			s.holdLeft(n, dir)
			continue
		}
		// Its agent may have outlived its launcher: gone before its
		// layer is read, so nothing writes to it meanwhile.
		if err := removeSession(ctx, s.Engine, dir); err != nil {
			if engine.Unreachable(err) == nil { // else the session's own calls say so
				s.Progress("warning: the layer session %s left was not held: its containers could not be removed: %v", dir, err)
			}
			continue
		}
		s.holdLeft(dir, dir)
	}
}

// othersContainers reports whether a container of session n exists that
// another launcher than this one made (or the engine cannot say).
func (s *Session) othersContainers(ctx context.Context, n string) bool {
	cs, err := listInspected(ctx, s.Engine, "container", "label="+plan.LabelSession+"="+n)
	if err != nil {
		return true
	}
	for _, c := range cs {
		if c.Config.Labels[plan.LabelOwner] != s.owner {
			return true
		}
	}
	return false
}

// leftMark joins a session's name and a unique suffix in the name its
// left layer directory is set aside under when a later session takes the
// name (setAsideLeft): session names cannot hold it (plan.ValidName).
const leftMark = "~left-"

// setAsideLeft moves a layer directory of the session's name, left by a
// session whose launcher is gone, out of the way of the session's own
// layers (it would take the dead session's changes for its own) and
// under a name holdLeftLayers holds it by. One that may be a live
// session's — the name's note is not this launcher's, or the provenance
// record open under it names another launcher that runs — is an error.
func (s *Session) setAsideLeft() error {
	root := s.Instance.FS()
	dir := path.Join(plan.LayersDir, s.Name)
	if _, err := root.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	live := !notedBy(s.Instance, s.Name, s.owner)
	if s.Provenance != nil {
		open, owner, err := s.Provenance.Opened(s.Name)
		live = live || err != nil || open && owner != s.owner && OwnerAlive(owner)
	}
	if live {
		return fmt.Errorf("the layers of a session named %s exist (%s) and it may be running", s.Name, dir)
	}
	return root.Rename(dir, dir+leftMark+strconv.FormatInt(time.Now().UnixNano(), 36))
}

// left reports whether the layer directory e of session n is left by a
// session whose launcher is gone.
func (s *Session) left(n string, e fs.DirEntry) bool {
	noted, alive := noteOf(s.Instance, n)
	if alive {
		return false
	}
	open, owner, err := s.Provenance.Opened(n)
	switch {
	case err != nil, open && OwnerAlive(owner):
		return false
	case noted, open:
		return true
	}
	fi, err := e.Info()
	return err == nil && time.Since(fi.ModTime()) > leftAge
}

// holdLeft holds the layers session name left in layers/dir, whole, and
// removes them; what it cannot hold it keeps, as an end does.
func (s *Session) holdLeft(name, dir string) {
	ls := s.leftLayersOf(dir)
	why, pwhy := leftWhy, provenance.LeftWhy
	if s.keptAt(dir) {
		why, pwhy = keptWhy, provenance.KeptWhy
	}
	k := keep{}
	merge := func(_ bool, stamp string) (kept []string, hold []provenance.LayerChange, problems []string) {
		for _, l := range ls {
			kp, h, p, failed := s.mergeLayer(l, true, stamp, time.Time{})
			kept, hold, problems = append(kept, kp...), append(hold, h...), append(problems, p...)
			if failed {
				k.add(l)
			}
		}
		return kept, hold, problems
	}
	r, err := s.Provenance.HoldLeft(name, pwhy, OwnerAlive, merge)
	if err != nil {
		s.Progress("warning: the changes session %s left were not held: %v (they stay in %s)", name, err, path.Join(plan.LayersDir, dir))
		return
	}
	for _, p := range r.Problems {
		s.Progress("warning: %s", p)
	}
	k.unheld(ls, r.Unheld)
	s.discardLayersOf(dir, ls, k, r.Problems)
	if len(r.Held) > 0 {
		s.Progress("%s", word(s.Words, ChangesHeld, "session", name, "why", why, "held", strconv.Itoa(len(r.Held))))
	}
}

// leftLayersOf are the layers in the layer directory layers/name, each
// share's by its directory's name (plan.LayerDir), overlay where it has a
// work directory (layer.Create makes one for overlay alone).
func (s *Session) leftLayersOf(name string) []*layer.Layer {
	root := s.Instance.FS()
	var out []*layer.Layer
	for _, sh := range instance.AgentShares() {
		if !sh.Dir {
			continue
		}
		dir := plan.LayerDir(name, sh.Rel)
		if fi, err := root.Lstat(path.Join(dir, "upper")); err != nil || !fi.IsDir() {
			continue
		}
		l := &layer.Layer{Root: root, Share: sh.Rel, Dir: dir, Work: path.Join(dir, "work"), Mode: layer.Copy}
		if fi, err := root.Lstat(l.Work); err == nil && fi.IsDir() {
			l.Mode = layer.Overlay
		}
		out = append(out, l)
	}
	return out
}
