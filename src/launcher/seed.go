package launcher

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/hobbs-agent/hobbs/src/engine"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/plan"
)

// A headless run's Claude Code state (ClaudeState). The run's agent gets a
// fresh directory of its own; the one thing it takes from the instance's
// state volume is the sign-in, which the launcher copies out of the plan's
// seed container — created with the volume mounted read-only beside the
// agent and the proxy, never started — through the engine's cp (no process
// runs) while the proxy starts. It takes at most maxSeed bytes of it, a
// regular file holding a JSON object, into the session file the agent
// mounts read-only (SessionClaudeCredentials); hobbs session-env copies it
// into the fresh directory before Claude Code starts (SeedClaudeState).
// The agent never sees the rest of the volume, and writes nothing to it.

// createSeed creates the plan's seed container, when the state volume
// exists (a run makes none).
func (s *Session) createSeed(ctx context.Context, reaped <-chan struct{}) error {
	p := s.plan
	if ok, err := s.Engine.Exists(ctx, "volume", "inspect", p.Claude.State.Volume); err != nil || !ok {
		return err
	}
	_, err := s.createContainer(ctx, "seed", p.Seed.Name, nil, p.Seed.CreateArgs(s.filesDir, s.owner), reaped)
	return err
}

// seedClaude copies the sign-in out of the seed container into its
// session file, and removes the container meanwhile. A state volume that
// does not exist or holds no sign-in leaves the file empty: Claude Code
// then signs in by a variable from the vault, or its result says it is
// not signed in. A sign-in that is too large, not a regular file or not a
// JSON object is left out with a warning.
func (s *Session) seedClaude(ctx context.Context) error {
	p := s.plan
	if p.Seed == nil || !s.has("seed") {
		return nil
	}
	defer func() {
		s.seedGone = spawn(func() error { return s.rmContainer(context.WithoutCancel(ctx), p.Seed.Name) })
	}()
	vol := p.Claude.State.Volume
	cmd, err := s.Engine.Command(ctx, nil, "cp", p.Seed.Name+":"+plan.SeedDir+"/"+plan.ClaudeCredentials, "-")
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	stderr := &limitBuffer{max: 4096}
	cmd.Stderr = stderr
	done := engine.TraceCall(cmd.Args[1:])
	if err := cmd.Start(); err != nil {
		done(err)
		return err
	}
	data, why, entry := readSeed(out)
	_, _ = io.Copy(io.Discard, io.LimitReader(out, maxSeed))
	_ = out.Close()
	err = cmd.Wait()
	done(err)
	msg := strings.TrimSpace(stderr.buf.String())
	switch {
	case err != nil && engine.IsUnreachableMsg(msg):
		return s.Engine.CallError("cp", msg)
	case err != nil && !entry && strings.Contains(msg, plan.ClaudeCredentials):
		return nil // no sign-in in the volume (the engine names the missing file)
	case err != nil && !entry:
		s.Progress("warning: could not read the Claude Code sign-in from volume %s (%s): the run starts without it", vol, firstLine(orDash(msg)))
		return nil
	case why != "":
		s.Progress("warning: %s in volume %s %s: the run starts without it", plan.ClaudeCredentials, vol, why)
		return nil
	}
	if err := os.WriteFile(filepath.Join(s.filesDir, "claude-credentials"), data, 0o600); err != nil {
		return errs.Wrap(errs.Failure, err, "session files")
	}
	return nil
}

// readSeed reads the sign-in from the engine's tar stream of it: one
// regular file of at most maxSeed bytes holding a JSON object; else why
// not. entry says whether the stream held an entry at all.
func readSeed(r io.Reader) (data []byte, why string, entry bool) {
	tr := tar.NewReader(r)
	h, err := tr.Next()
	switch {
	case err != nil:
		return nil, "could not be read (" + err.Error() + ")", false
	case h.Typeflag != tar.TypeReg:
		return nil, "is not a regular file", true
	case h.Size > maxSeed:
		return nil, fmt.Sprintf("is larger than %d bytes", maxSeed), true
	}
	b, err := io.ReadAll(io.LimitReader(tr, maxSeed))
	if err != nil {
		return nil, "could not be read (" + err.Error() + ")", true
	}
	data = bytes.TrimSpace(b)
	if !json.Valid(data) || !bytes.HasPrefix(data, []byte("{")) {
		return nil, "is not a JSON object", true
	}
	return data, "", true
}

// limitBuffer keeps up to max bytes and refuses more: the command writing
// to it then fails on a closed pipe instead of filling memory.
type limitBuffer struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (l *limitBuffer) Write(p []byte) (int, error) {
	if l.buf.Len()+len(p) > l.max {
		l.over = true
		return 0, errSeedTooLarge
	}
	return l.buf.Write(p)
}

var errSeedTooLarge = errors.New("too large")

// SeedClaudeState copies a headless run's sign-in (the session file, when
// it is not empty) into Claude Code's directory dir, mode 0600, unless a
// sign-in is there already. hobbs session-env does it, in the agent's
// container, before Claude Code starts. Outside a run there is no file:
// nothing happens.
func SeedClaudeState(dir string) error { return seedClaudeState(plan.SessionClaudeCredentials, dir) }

func seedClaudeState(src, dir string) error {
	data, err := os.ReadFile(src)
	if errors.Is(err, os.ErrNotExist) || err == nil && len(data) == 0 || dir == "" {
		return nil
	}
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, plan.ClaudeCredentials), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
