package launcher

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/hobbs-agent/hobbs/src/errs"
)

// Whether Claude Code will ask to sign in. Claude Code keeps its sign-in
// on Linux in .credentials.json in its configuration directory
// (CLAUDE_CONFIG_DIR: the instance's state volume in a session), and takes
// a credential from the environment before it (docs/identity.md, "Signing
// in", cites Claude Code's authentication page). The agent's start
// (hobbs session-env) says what will happen when there is neither, since
// Claude Code's own words come only after the session is up.

// NotSignedIn is the notice of a session whose Claude Code is not signed
// in (no facts).
const NotSignedIn errs.Kind = "launcher.not-signed-in"

// credentialVars are the variables Claude Code takes a credential from
// ahead of its sign-in (cloud providers, tokens, API keys).
var credentialVars = []string{"CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_USE_FOUNDRY",
	"ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"}

// SignInNeeded reports whether Claude Code started with environ (NAME=value)
// would find no sign-in: no credential variable set and no
// .credentials.json in its configuration directory (CLAUDE_CONFIG_DIR,
// else ~/.claude). An apiKeyHelper in its settings is not looked for.
func SignInNeeded(environ []string) bool {
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	for _, k := range credentialVars {
		if env[k] != "" {
			return false
		}
	}
	dir := env["CLAUDE_CONFIG_DIR"]
	if dir == "" {
		if env["HOME"] == "" {
			return false // nowhere to look: say nothing
		}
		dir = filepath.Join(env["HOME"], ".claude")
	}
	fi, err := os.Stat(filepath.Join(dir, ".credentials.json"))
	return err != nil || fi.Size() == 0
}

// StartsClaudeSession reports whether args (a session's command) start
// Claude Code for a person: claude, not in print mode (-p, --print).
func StartsClaudeSession(args []string) bool {
	if len(args) == 0 || filepath.Base(args[0]) != "claude" {
		return false
	}
	for _, a := range args[1:] {
		if a == "-p" || a == "--print" || a == "--version" || a == "-v" || a == "--help" || a == "-h" {
			return false
		}
	}
	return true
}
