package image

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"time"

	"github.com/hobbs-agent/hobbs/src/engine"
	"github.com/hobbs-agent/hobbs/src/errs"
)

// Whether an image has Claude Code. A session's default command, a chat
// turn's and a playbook run's is claude, which the runtime base brings
// (dist/Dockerfile.runtime); a base made offline from Debian
// (hobbs build --base-from-debian) has none. A build looks for claude in
// its base (ClaudePath) and records what it found in the image's
// LabelClaude, which Ensure reads with the image's other labels: a run
// learns it without starting a container, before its agent starts
// (launcher: NoClaudeCode).

// LabelClaude is the label of a Hobbs image that says where claude is on
// its base's PATH, or ClaudeNone. An image without it (built by an older
// hobbs, or pulled) is not known either way.
const LabelClaude = "dev.hobbs.claude"

// ClaudeNone is LabelClaude's value for a base without claude.
const ClaudeNone = "none"

// claudeProbeTimeout bounds the container ClaudePath starts.
const claudeProbeTimeout = 2 * time.Minute

// noClaudeExit is the probe's exit status when claude is not on the PATH.
// The shell's own status for that differs between shells (dash's
// `command -v` gives 127, as the engine does when the image has no sh), so
// the probe names its own.
const noClaudeExit = 9

// ClaudePath runs `command -v claude` in image ref (no network, nothing
// pulled) and returns where claude is, or "" when the image has none. An
// error is the engine's, or an image it cannot run sh in.
func ClaudePath(ctx context.Context, e engine.CLI, ref string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, claudeProbeTimeout)
	defer cancel()
	cmd, err := e.Command(ctx, nil, "run", "--rm", "--pull", "never", "--network", "none", "--entrypoint", "sh", ref,
		"-c", "command -v claude || exit 9")
	if err != nil {
		return "", err
	}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	p := strings.TrimSpace(stdout.String())
	if i := strings.IndexByte(p, '\n'); i >= 0 {
		p = p[:i]
	}
	var ee *exec.ExitError
	switch {
	case err == nil && p != "":
		return p, nil
	case errors.As(err, &ee) && ee.ExitCode() == noClaudeExit:
		return "", nil
	}
	msg := strings.TrimSpace(stderr.String())
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	if msg == "" && err != nil {
		msg = err.Error()
	} else if msg == "" {
		msg = "no answer"
	}
	return "", errs.Failf("look for claude in %s: %s", ref, msg)
}

// claudeLabel is the --label flag that records what ClaudePath found in
// base, none when it could not look.
func claudeLabel(ctx context.Context, e engine.CLI, base string) []string {
	p, err := ClaudePath(ctx, e, base)
	if err != nil {
		return nil
	}
	if p == "" {
		p = ClaudeNone
	}
	return []string{"--label", LabelClaude + "=" + p}
}

// HasClaude reports what labels say of an image's claude: known is false
// when they do not say.
func HasClaude(labels map[string]string) (has, known bool) {
	v, ok := labels[LabelClaude]
	if !ok || v == "" {
		return false, false
	}
	return v != ClaudeNone, true
}

// NoClaudeCode is the error of a run whose image has no Claude Code: the
// one every caller (hobbs run, chat, playbook run, serve, doctor) reports.
func NoClaudeCode(ref string) *errs.Error {
	return errs.Missingf("image %s has no Claude Code (no claude on its PATH): a session cannot start it", ref).
		Advise(NoClaude, "image", ref, "default", DefaultBase)
}

// LabelledClaude is HasClaude of image ref's labels.
func LabelledClaude(ctx context.Context, e engine.CLI, ref string) (has, known bool, err error) {
	img, ok, err := imageInfo(ctx, e, ref)
	if err != nil || !ok {
		return false, false, err
	}
	has, known = HasClaude(img.labels)
	return has, known, nil
}
