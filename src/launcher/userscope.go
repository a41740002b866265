package launcher

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/hobbs-agent/hobbs/src/egress"
	"github.com/hobbs-agent/hobbs/src/engine"
	"github.com/hobbs-agent/hobbs/src/layer"
	"github.com/hobbs-agent/hobbs/src/plan"
	"github.com/hobbs-agent/hobbs/src/provenance"
	"github.com/hobbs-agent/hobbs/src/userscope"
)

// The Claude Code user scope on the state volume (src/userscope). An
// interactive session mounts the instance's state volume writable, and
// Claude Code loads instructions, settings and tools from it in every
// later session. The host cannot read the volume; the launcher reads it
// through the engine's cp as a tar stream, parsed in Go (never extracted,
// no link followed):
//
//   - at the start, from the agent's container once it is created and
//     before it starts: the baseline. Approved user-scope changes are
//     written first (provenance.ScopeWrites), each only if its file is
//     still what it was held against;
//   - at the end, once the agent has ended: the change set, from the
//     proxy's listing (plan.StateListing: the proxy mounts the volume
//     read-only and lists it at its stop when asked, askScope), else from
//     a helper container created (never started) with the volume mounted,
//     the agent's being gone (--rm).
//
// At a tainted session's end, what it created, changed or removed in the
// scope is held for review and the scope put back as it was, by one
// helper container that removes the changed paths and unpacks the
// baseline's files (a tar built in Go) as the agent's user.

// userScoped reports whether the session mounts the state volume
// writable and has a record to hold its changes in.
func (s *Session) userScoped() bool {
	return s.layered() && s.Provenance != nil && !s.plan.Claude.State.Fresh && s.claudeVolume() != ""
}

func (s *Session) scopeHelperName() string { return s.Name + "-scope" }

func (s *Session) scopeLayerDir() string { return path.Join(plan.LayersDir, s.Name, "user-scope") }

// keepScope keeps the content of user-scope files (to hold or put back).
func keepScope(p string) bool { return userscope.InScope(p) }

// readScope lists the state volume's directory as container (created or
// stopped) has it mounted.
func (s *Session) readScope(ctx context.Context, container string) (*userscope.Listing, error) {
	cmd, err := s.Engine.Command(ctx, nil, "cp", container+":"+plan.ClaudeDir, "-")
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr := &limitBuffer{max: 4096}
	cmd.Stderr = stderr
	done := engine.TraceCall(cmd.Args[1:])
	if err := cmd.Start(); err != nil {
		done(err)
		return nil, err
	}
	l, rerr := userscope.Read(out, path.Base(plan.ClaudeDir), userscope.DefaultLimits, keepScope)
	if rerr != nil {
		_ = cmd.Process.Kill()
	}
	_, _ = io.Copy(io.Discard, out)
	werr := cmd.Wait()
	done(werr)
	switch {
	case rerr != nil:
		return nil, rerr
	case werr != nil:
		return nil, s.Engine.CallError("cp", strings.TrimSpace(stderr.buf.String()))
	}
	return l, nil
}

// prepareScope takes the state volume's lease and, for a session that
// holds its user scope, the listing the last session's end kept (when it
// is certainly what the volume holds: scopelease.go) and the approved
// changes waiting to be written. It runs while the session's objects are
// created (scopePrep); beginScope waits for it.
func (s *Session) prepareScope() error {
	vol := s.claudeVolume()
	if vol == "" {
		return nil
	}
	if s.plan.StateListing != "" {
		// An ask a dead launcher left would have this session's proxy
		// list the volume at a stop that came before the agent's end.
		for _, f := range s.listingFiles() {
			if err := s.Instance.FS().Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("remove %s: %w", f, err)
			}
		}
		s.sweepListings()
	}
	lease, err := openLease(scopeKey(s.Engine.Bin, vol))
	if err != nil {
		return fmt.Errorf("the Claude state volume %s: %w", vol, err)
	}
	s.lease = lease
	if !s.userScoped() {
		lease.drop() // written, not read: a kept listing would go stale
		return nil
	}
	if s.scopeKept, err = s.keptScope(lease, vol); err != nil {
		return fmt.Errorf("the Claude state volume %s: %w", vol, err)
	}
	s.scopeWrites, err = s.Provenance.ScopeWrites(vol)
	return err
}

// scopePrepared waits for prepareScope, when it was started.
func (s *Session) scopePrepared() error {
	if s.scopePrep == nil {
		return nil
	}
	return s.scopePrep.wait()
}

// beginScope takes the baseline — the kept listing, else the volume read
// from the created helper — after writing the approved changes waiting
// for it. With a kept listing, the helper the end reads the volume from
// is created beside the agent's start.
func (s *Session) beginScope(ctx context.Context) error {
	if err := s.scopePrepared(); err != nil || !s.userScoped() {
		return err
	}
	vol := s.claudeVolume()
	l := s.scopeKept
	if l == nil {
		engine.Tracef("session: reading the user scope")
		if err := s.scopeHelper.wait(); err != nil {
			return fmt.Errorf("read the Claude Code user scope on volume %s: %w", vol, err)
		}
		var err error
		if l, err = s.readScope(ctx, s.scopeHelperName()); err != nil {
			return fmt.Errorf("read the Claude Code user scope on volume %s: %w", vol, err)
		}
	} else if s.plan.StateListing == "" {
		// No listing from the proxy: the end reads from the helper.
		s.scopeHelper = spawn(func() error { return s.createScopeHelper(context.WithoutCancel(ctx)) })
	}
	writes := s.scopeWrites
	var written, changed, remove []string
	var files []*userscope.Entry
	for _, w := range writes {
		cur := l.Entries[w.Path]
		switch {
		case cur == nil && w.Before == "", cur != nil && cur.Kind == userscope.File && cur.Hash == w.Before:
		default:
			changed = append(changed, w.ID)
			s.Progress("warning: %s: %s changed in the Claude Code user scope since it was held: not written; review it again", w.ID, w.Path)
			continue
		}
		written = append(written, w.ID)
		remove = append(remove, w.Path)
		if w.Text != nil {
			e := &userscope.Entry{Path: w.Path, Kind: userscope.File, Data: w.Text, Size: int64(len(w.Text)), Hash: hashOf(w.Text), Exec: w.Exec}
			files = append(files, e)
			l.Entries[w.Path] = e
		} else {
			delete(l.Entries, w.Path)
		}
	}
	if len(written) > 0 {
		if err := s.writeScope(ctx, l, remove, files); err != nil {
			return fmt.Errorf("write the approved user-scope changes: %w", err)
		}
	}
	if err := s.Provenance.ScopeApplied(written, changed); err != nil {
		return err
	}
	s.scopeBefore = l
	return nil
}

// keptScope is the listing the last session's end kept of vol, when this
// launcher is alone on the volume and no note of another session of the
// instance was there at the start (a launcher that died may have left its
// agent writing the volume); else it removes any and returns nil.
func (s *Session) keptScope(lease *scopeLease, vol string) (*userscope.Listing, error) {
	alone, err := lease.alone()
	if err != nil || !alone {
		lease.drop()
		return nil, err
	}
	var l *userscope.Listing
	if s.othersAtStart {
		lease.drop()
	} else {
		l = lease.take(vol)
	}
	return l, lease.share()
}

// createScopeHelper creates (never starts) the container the start reads
// the state volume from when it has no kept listing, and the end always,
// the agent's being removed with its end (--rm).
func (s *Session) createScopeHelper(ctx context.Context) error {
	args := append([]string{"create", "--pull", "never", "--name", s.scopeHelperName(), "--network", "none"}, s.labelFlags(plan.RoleClaude)...)
	args = append(args, "--mount", s.stateMount(), "--entrypoint", "true", s.plan.Agent.Image)
	_, err := s.Engine.Output(ctx, args...)
	return err
}

// stateMount mounts the state volume where the agent has it, with the
// labels the agent's mount gives a volume the engine makes (the helper's
// create may be the first to name it).
func (s *Session) stateMount() string {
	f := "type=volume,source=" + s.claudeVolume() + ",target=" + plan.ClaudeDir
	for _, m := range s.plan.Agent.Mounts {
		if m.Target == plan.ClaudeDir {
			for _, l := range m.Labels {
				f += ",volume-label=" + l
			}
		}
	}
	return f
}

// askScope, once the agent has ended and before the proxy is stopped,
// asks the proxy to list the state volume at its stop (plan.StateListing;
// the ask is a file beside the listing's, which the proxy looks for once
// drained: a stop that came before the ask lists nothing). Any listing
// left by an earlier session of the same name goes first. Alone on the
// volume's lease, the end holds it exclusively from before the listing
// until what it lists is kept (settleScope).
func (s *Session) askScope() {
	if !s.scopeListable() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proxyStop != nil || s.scopeEnd != nil {
		return // too late: the proxy's stop is under way
	}
	if s.lease != nil {
		s.endAlone, _ = s.lease.alone()
	}
	root := s.Instance.FS()
	ask := s.plan.StateListing + egress.StateAskSuffix
	if err := root.Remove(s.plan.StateListing); err != nil && !errors.Is(err, fs.ErrNotExist) {
		engine.Tracef("session: the user scope's listing: %v", err)
		return
	}
	if err := root.Write(ask, nil, 0o600); err != nil {
		engine.Tracef("session: the user scope's listing: %v", err)
		return
	}
	s.scopeAsked = true
}

// listingFiles are the files of the proxy's listing for this session: the
// ask, the listing and the one a killed proxy left half written.
func (s *Session) listingFiles() []string {
	l := s.plan.StateListing
	return []string{l + egress.StateAskSuffix, l, l + userscope.TmpSuffix}
}

// sweepListings removes the listing files of sessions whose launcher died
// before it read them (an hour old: a listing is read within seconds):
// they hold the user scope's files.
func (s *Session) sweepListings() {
	root := s.Instance.FS()
	dir := path.Dir(s.plan.StateListing)
	ents, err := root.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), plan.StateListingPrefix) {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() && time.Since(fi.ModTime()) > time.Hour {
			_ = root.Remove(path.Join(dir, e.Name()))
		}
	}
}

// scopeListable reports whether the session's proxy can list the state
// volume for its end (plan.StateListing) and the end needs it.
func (s *Session) scopeListable() bool {
	return s.plan.StateListing != "" && s.userScoped() && s.scopeBefore != nil
}

// listedScope is the proxy's listing of the state volume, once the proxy
// has exited (stop: its stop), when this end asked for it; the files go
// once read.
func (s *Session) listedScope(stop *future) (*userscope.Listing, error) {
	s.mu.Lock()
	asked := s.scopeAsked
	s.mu.Unlock()
	if !asked {
		return nil, errors.New("not asked for")
	}
	root := s.Instance.FS()
	defer func() {
		for _, f := range s.listingFiles() {
			_ = root.Remove(f)
		}
	}()
	if stop == nil {
		return nil, errors.New("the proxy was not stopped")
	}
	if err := s.proxyStopped(stop); err != nil {
		return nil, err
	}
	f, err := root.Open(s.plan.StateListing)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return userscope.LoadListed(f, s.Name)
}

// endScope starts, once the agent is gone (read: it has written all it
// will), the reading of the state volume — the proxy's listing when it
// was asked for (askScope), else from the helper, created now when the
// start made none — and the helper's removal, while the cleanup removes
// the rest; the session's end waits for it (scopeResult). Without read,
// only the helper is removed.
func (s *Session) endScope(ctx context.Context, read bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.scopeEnd != nil || s.scopeHelper == nil && s.scopeBefore == nil {
		return
	}
	asked, stop, helper := s.scopeAsked, s.proxyStop, s.scopeHelper
	s.scopeEnd = spawn(func() error {
		// Its own time: the cleanup's ends when the cleanup returns.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 60*time.Second)
		// The helper, where there is one, goes once read, while the
		// session's end goes on.
		defer func() {
			if helper == nil {
				cancel()
				return
			}
			s.scopeRemoved = spawn(func() error { defer cancel(); return s.rmContainer(ctx, s.scopeHelperName()) })
		}()
		if !read || s.scopeBefore == nil {
			return errors.New("not read")
		}
		if asked {
			l, err := s.listedScope(stop)
			if err == nil {
				engine.Tracef("session: the user scope listed by the proxy")
				s.scopeAfter = l
				return nil
			}
			engine.Tracef("session: the proxy's listing of the user scope: %v", err)
		} else if s.lease != nil {
			s.endAlone, _ = s.lease.alone()
		}
		engine.Tracef("session: reading the user scope from a helper")
		if helper == nil || helper.wait() != nil {
			// Made now (none at the start), or again once (its create
			// beside the agent's start failed).
			helper = spawn(func() error { return s.createScopeHelper(ctx) })
			if err := helper.wait(); err != nil {
				return fmt.Errorf("no helper container to read it from: %w", err)
			}
		}
		l, err := s.readScope(ctx, s.scopeHelperName())
		s.scopeAfter = l
		return err
	})
}

// scopeDone waits for the helper's removal.
func (s *Session) scopeDone() {
	if s.scopeEnd != nil {
		_ = s.scopeEnd.wait()
		if s.scopeRemoved != nil {
			_ = s.scopeRemoved.wait()
		}
	}
}

// scopeResult is the end's reading of the state volume.
func (s *Session) scopeResult() (*userscope.Listing, error) {
	if s.scopeEnd == nil {
		return nil, errors.New("not read")
	}
	if err := s.scopeEnd.wait(); err != nil {
		return nil, err
	}
	return s.scopeAfter, nil
}

// writeScope removes the paths remove from the state volume and writes
// files there, in one helper container run as the agent's user. Both
// come on its standard input (userscope.PutBack): the agent decides how
// many paths there are and how long, which no command line could hold.
func (s *Session) writeScope(ctx context.Context, in *userscope.Listing, remove []string, files []*userscope.Entry) error {
	var tarball bytes.Buffer
	isLink := func(p string) bool { e := in.Entries[p]; return e != nil && e.Kind == userscope.Link }
	if err := userscope.PutBack(&tarball, remove, isLink, files); err != nil {
		return err
	}
	dir := plan.ClaudeDir
	args := []string{"run", "--rm", "-i", "--pull", "never", "--network", "none", "--user", s.plan.Agent.User,
		"--cap-drop", "ALL", "--security-opt", "no-new-privileges"}
	if s.plan.Agent.Userns != "" {
		args = append(args, "--userns", s.plan.Agent.Userns)
	}
	args = append(args, s.labelFlags(plan.RoleClaude)...)
	args = append(args, "--mount", s.stateMount(), "--entrypoint", "sh", s.plan.Agent.Image, "-c", putBackScript, dir)
	_, err := s.Engine.OutputWith(ctx, nil, &tarball, args...)
	return err
}

// putBackScript is the helper's put-back (sh -c SCRIPT DIR, the stream
// of userscope.PutBack on its standard input), unpacked in the helper's
// own /tmp. The agent may have taken its owner's write or search
// permission off what it left (a planted skill in a directory made
// read-only): the agent's user gives them back to the directories on the
// way and to what is removed, but links, before removing it; then the
// files go in place. A handful of processes, however many paths (xargs).
const putBackScript = `t=$(mktemp -d) && tar -x -f - -C "$t" && cd "$0" || exit 1
xargs -0 chmod u+rwx -- <"$t/` + userscope.PutBackDirs + `" 2>/dev/null
xargs -0 chmod -R u+rwX -- <"$t/` + userscope.PutBackTrees + `" 2>/dev/null
xargs -0 rm -rf -- <"$t/` + userscope.PutBackRemove + `" || exit 1
[ ! -d "$t/` + userscope.PutBackFiles + `" ] || cp -a "$t/` + userscope.PutBackFiles + `/." .`

// holdScope, at a tainted session's end, holds what it changed in the
// user scope (after: the end's listing) and puts the scope back.
func (s *Session) holdScope(ctx context.Context, after *userscope.Listing) (hold []provenance.LayerChange, problems []string) {
	before := s.scopeBefore
	root := s.Instance.FS()
	upper := path.Join(s.scopeLayerDir(), "upper")
	var remove []string
	var restore []*userscope.Entry
	for _, c := range userscope.Diff(before, after, userscope.InScope) {
		remove = append(remove, c.Path)
		if c.Before != nil && c.Before.Kind != userscope.Odd {
			restore = append(restore, c.Before)
		}
		if a := c.After; a != nil && (a.Kind == userscope.Odd || a.Kind == userscope.Link && !strings.HasPrefix(a.Target, plan.InstanceDir+"/")) {
			problems = append(problems, fmt.Sprintf("Claude Code user scope %s: %s (removed)", c.Path, a.Why))
		}
		if c.Before != nil && c.Before.Kind == userscope.Odd {
			problems = append(problems, fmt.Sprintf("Claude Code user scope %s: %s at the session's start (removed)", c.Path, c.Before.Why))
		}
		// Directories and odd entries are put back or removed, not held.
		b, a := c.Before, c.After
		if b != nil && b.Kind != userscope.File {
			b = nil
		}
		if a != nil && a.Kind != userscope.File {
			a = nil
		}
		if b == nil && a == nil {
			continue
		}
		ch := provenance.LayerChange{Path: c.Path, Volume: s.claudeVolume(), Why: "the Claude Code user scope"}
		if b != nil {
			ch.Base, ch.BaseData = b.Hash, b.Data
		}
		if a != nil {
			ch.From = path.Join(upper, c.Path)
			err := root.MkdirAll(path.Dir(ch.From), 0o700)
			if err == nil {
				// Runnable by its owner when the session's was: the held
				// change keeps it (holdLayer reads the mode).
				err = root.Write(ch.From, a.Data, layer.Perm(a.Exec)&0o700)
			}
			if err != nil {
				problems = append(problems, err.Error())
				continue
			}
		}
		hold = append(hold, ch)
	}
	if len(remove) > 0 {
		s.scopeRestored = true
		if err := s.writeScope(ctx, after, remove, restore); err != nil {
			problems = append(problems, fmt.Sprintf("the Claude Code user scope on volume %s was not put back: %v", s.claudeVolume(), err))
		}
	}
	return hold, problems
}

// settleScope keeps after, the end's listing, for the next session's
// start when this launcher was alone on the volume from before it read it
// and wrote nothing there since; else it removes any kept listing. Then it
// lets go of the lease.
func (s *Session) settleScope(after *userscope.Listing) {
	if s.lease == nil {
		return
	}
	if s.endAlone && after != nil && !s.scopeRestored {
		if err := s.lease.keep(s.claudeVolume(), after); err != nil {
			engine.Tracef("session: the user scope's listing was not kept: %v", err)
		}
	} else {
		s.lease.drop()
	}
	s.lease.release()
}

// wroteTranscripts are the conversation transcripts created or changed
// between before and after (a resumed conversation appends to its
// transcript).
func wroteTranscripts(before, after *userscope.Listing) []string {
	var out []string
	for _, c := range userscope.Diff(before, after, userscope.IsTranscript) {
		if c.After != nil {
			out = append(out, c.Path)
		}
	}
	return out
}
