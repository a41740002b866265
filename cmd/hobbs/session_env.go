package main

import (
	"os"
	"os/exec"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/launcher"
)

// newSessionEnvCmd is the image's way to run a command with the session's
// variables (vault-mapped secrets, the proxy variables with their token),
// which hobbs run hands over in a file rather than in the container's
// configuration (plan.SessionEnvFile). Hidden: the entry point and
// `hobbs attach --shell` call it, not people.
func newSessionEnvCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:    "session-env -- COMMAND [ARG...]",
		Short:  "Run a command with the session's variables (inside the agent container)",
		Hidden: true,
		Args:   usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			env, caErr, err := launcher.SessionEnviron(os.TempDir())
			if err != nil {
				return err
			}
			if caErr != nil {
				a.warn("cannot make the CA bundle (HTTPS to hosts the proxy intercepts will fail): %v", caErr)
			}
			for _, kv := range env {
				k, v, _ := strings.Cut(kv, "=")
				os.Setenv(k, v)
			}
			if launcher.StartsClaudeSession(args) && a.stdinIsTTY() && launcher.SignInNeeded(os.Environ()) {
				a.status("hobbs: %s", adviceText(errs.NewAdvice(launcher.NotSignedIn)))
			}
			path, err := exec.LookPath(args[0])
			if err != nil {
				return errs.Wrap(errs.Missing, err, "run %s", args[0])
			}
			return errs.Wrap(errs.Failure, syscall.Exec(path, args, os.Environ()), "run %s", args[0])
		},
	}
}
