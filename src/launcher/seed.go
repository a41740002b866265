package launcher

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/hobbs-agent/hobbs/src/engine"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/plan"
)

// A headless run's Claude Code state (ClaudeState). The run's agent gets a
// fresh directory of its own; the one thing it takes from the instance's
// state volume is the sign-in, which the plan's seed container reads out
// of the volume, mounted read-only, while the proxy starts. The launcher
// takes at most maxSeed bytes of it, and only a JSON object, into the
// session file the agent mounts read-only (SessionClaudeCredentials);
// hobbs session-env copies it into the fresh directory before Claude Code
// starts (SeedClaudeState). The agent never sees the rest of the volume,
// and writes nothing to it.

// seedClaude runs the plan's seed and fills the sign-in's session file. A
// state volume that does not exist or holds no sign-in leaves the file
// empty: Claude Code then signs in by a variable from the vault, or its
// result says it is not signed in. A sign-in that is too large or not a
// JSON object is left out with a warning.
func (s *Session) seedClaude(ctx context.Context) error {
	p := s.plan
	if p.Seed == nil {
		return nil
	}
	vol := p.Claude.State.Volume
	if ok, err := s.Engine.Exists(ctx, "volume", "inspect", vol); err != nil || !ok {
		return err
	}
	cmd, err := s.Engine.Command(ctx, nil, p.Seed.RunArgs(s.owner)...)
	if err != nil {
		return err
	}
	cmd.Stdin = bytes.NewReader(plan.SeccompProfile())
	out := &limitBuffer{max: maxSeed}
	var stderr limitBuffer
	stderr.max = 4096
	cmd.Stdout, cmd.Stderr = out, &stderr
	done := engine.TraceCall(cmd.Args[1:])
	err = cmd.Run()
	done(err)
	msg := strings.TrimSpace(stderr.buf.String())
	switch {
	case out.over:
		s.Progress("warning: the Claude Code sign-in in volume %s is larger than %d bytes: the run starts without it", vol, maxSeed)
		return nil
	case err != nil && engine.IsUnreachableMsg(msg):
		return s.Engine.CallError("run", msg)
	case err != nil && strings.Contains(msg, plan.ClaudeCredentials):
		return nil // no sign-in in the volume (cat names the missing file)
	case err != nil:
		s.Progress("warning: could not read the Claude Code sign-in from volume %s (%s): the run starts without it", vol, firstLine(orDash(msg)))
		return nil
	}
	data := bytes.TrimSpace(out.buf.Bytes())
	if !json.Valid(data) || !bytes.HasPrefix(data, []byte("{")) {
		s.Progress("warning: %s in volume %s is not a JSON object: the run starts without it", plan.ClaudeCredentials, vol)
		return nil
	}
	if err := os.WriteFile(filepath.Join(s.filesDir, "claude-credentials"), data, 0o600); err != nil {
		return errs.Wrap(errs.Failure, err, "session files")
	}
	return nil
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
