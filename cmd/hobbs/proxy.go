package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/egress"
)

func newProxyCmd(a *app) *cobra.Command {
	c := egress.ProxyConfig{Logf: func(format string, args ...any) {
		fmt.Fprintf(a.errOut, "hobbs proxy: %s\n", audit.Redact(fmt.Sprintf(format, args...)))
	}}
	cmd := &cobra.Command{
		Use:   "proxy",
		Short: "Run the egress proxy (allowlist, deny by default)",
		Long: `proxy runs the egress proxy the agent's container talks through. It allows
only what the policy files list (merged in order: the image's default, then
the instance's policy.yaml) and denies everything else, on CONNECT tunnels
and on plain-HTTP forwarding alike. It resolves names itself and refuses
private, loopback and link-local addresses unless allow_private opens them.

The policy files are watched and reloaded when they change; an invalid edit
keeps the last good policy. Every decision is one JSON line in --audit.
With --auth-token-file (or --auth-token-env, which names a variable holding
it), clients must authenticate as user "hobbs" with the token as password
(HTTP_PROXY=http://hobbs:TOKEN@proxy:3128).

With --secrets-file (hobbs run writes it on the session's tmpfs: the session
CA with its key and the secrets config.yaml binds to hosts), the proxy puts
each secret in place of its placeholder in requests to its hosts only,
refuses requests that carry one anywhere else, and intercepts HTTPS to those
hosts and to hosts with request rules (docs/egress.md).

With --hold and --approvals, a request to a host no rule names waits (up to
--hold) while the owner is asked: a question in the approvals directory,
answered with hobbs approvals on the host or from the Telegram channel of
hobbs serve. Deny entries, private addresses and leaks are refused at once.

With --state-dir and --state-listing (hobbs run mounts the Claude Code
state volume read-only), SIGTERM, once drained, lists the volume into the
listing file when a file of that name with ` + egress.StateAskSuffix + ` added exists: the
launcher asks once the agent has ended, and reads the listing instead of
copying the volume out through the engine.

Without --policy, ` + egress.ImagePolicy + ` is used. SIGTERM drains open
requests and tunnels (up to --grace) and exits 0.`,
		Example: `  hobbs proxy --policy /etc/hobbs/policy.yaml --policy ~/.hobbs/policy.yaml \
      --audit ~/.hobbs/logs/egress/audit.log --auth-token-file /run/secrets/proxy-token
  hobbs proxy --listen 127.0.0.1:3128 --policy policy.yaml
  hobbs proxy --listen unix:/run/hobbs/proxy.sock --policy policy.yaml
  HOBBS_PROXY_TOKEN=s3cret hobbs proxy --policy policy.yaml --auth-token-env HOBBS_PROXY_TOKEN
  HTTPS_PROXY=http://127.0.0.1:3128 curl https://api.github.com/zen`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error { return egress.RunProxy(cmd.Context(), c) },
	}
	f := cmd.Flags()
	f.StringVar(&c.Listen, "listen", "0.0.0.0:3128", "address to listen on: HOST:PORT or unix:PATH")
	f.StringArrayVar(&c.Policies, "policy", nil, "policy file, repeatable; merged in order (default "+egress.ImagePolicy+")")
	f.StringVar(&c.AuditPath, "audit", "", "append one JSON line per decision to this file")
	f.StringVar(&c.Session, "session", "", "the session whose traffic this is, named in each audit line")
	f.StringVar(&c.TokenFile, "auth-token-file", "", "file holding the proxy token; clients must send it (user hobbs)")
	f.StringVar(&c.TokenEnv, "auth-token-env", "", "environment variable holding the proxy token (removed from the environment once read)")
	cmd.MarkFlagsMutuallyExclusive("auth-token-file", "auth-token-env")
	f.StringVar(&c.SecretsFile, "secrets-file", "", "the session's CA and bound secrets (JSON; hobbs run writes it)")
	f.StringVar(&c.UpstreamCA, "upstream-ca", "", "PEM roots to trust, besides the system's, for intercepted hosts (tests)")
	f.DurationVar(&c.Idle, "idle-timeout", 10*time.Minute, "close a tunnel after this long without traffic")
	f.DurationVar(&c.Grace, "grace", 10*time.Second, "on SIGTERM, wait this long for open tunnels")
	f.DurationVar(&c.Hold.Wait, "hold", 0, "hold a request to a host outside the policy this long while the owner is asked (needs --approvals, --session)")
	f.StringVar(&c.Hold.Dir, "approvals", "", "the approvals directory questions are asked in (hobbs run mounts the instance's)")
	f.StringVar(&c.Hold.Origin, "origin", "", "how the session started, KIND[:NAME] (a trigger's or a mail message's session is tainted), for questions")
	f.BoolVar(&c.Hold.Untrusted, "untrusted", false, "the session starts tainted: its start carries untrusted input (a chat turn's), for questions")
	f.StringVar(&c.Hold.Playbook, "playbook", "", "the playbook whose run: block is the policy (Always adds the host there), for questions")
	f.StringVar(&c.StateDir, "state-dir", "", "the Claude Code state directory to list at SIGTERM when asked (mounted read-only)")
	f.StringVar(&c.StateListing, "state-listing", "", "where to write that listing (asked by a file of this name with "+egress.StateAskSuffix+" added)")
	cmd.MarkFlagsRequiredTogether("state-dir", "state-listing")
	cmd.AddCommand(newProxyHealthCmd(a), newProxyRelayCmd(a))
	return cmd
}

func newProxyRelayCmd(a *app) *cobra.Command {
	var listen, to string
	var detach bool
	var listenFD int
	cmd := &cobra.Command{
		Use:   "relay",
		Short: "Forward a local TCP address to the proxy's unix socket",
		Long: `relay listens on --listen and forwards every connection, byte for byte, to
the proxy at --to. In a hobbs run session the agent's container has no
network but loopback: the proxy listens on a unix socket shared with it, and
the image's entry point starts this relay so that programs find the proxy
at the TCP address in HTTP_PROXY. The relay checks nothing itself: the
token, the policy and the address guard are the proxy's. A connection that
comes while the proxy is still starting is held until it answers (30 s at
most). It runs until SIGTERM or SIGINT; with --detach it runs in the
background (output discarded) and the command prints its pid and returns
once it listens.`,
		Example: `  hobbs proxy relay --listen 127.0.0.1:3128 --to unix:/run/hobbs/proxy.sock
  hobbs proxy relay --detach   # the entry point's way: returns once listening`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			ln, err := egress.RelayListener(listen, listenFD) // --listen-fd: started by --detach
			if err != nil {
				return err
			}
			if detach {
				pid, err := egress.DetachRelay(ln, "proxy", "relay", "--listen", listen, "--to", to, "--listen-fd", "3")
				if err == nil {
					fmt.Fprintln(a.out, pid)
				}
				return err
			}
			logf := func(format string, args ...any) {
				fmt.Fprintf(a.errOut, "hobbs proxy relay: %s\n", fmt.Sprintf(format, args...))
			}
			logf("relaying %s to %s", ln.Addr(), to)
			return (&egress.Relay{To: to, Logf: logf}).Serve(cmd.Context(), ln)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:3128", "local HOST:PORT to listen on")
	cmd.Flags().StringVar(&to, "to", "unix:/run/hobbs/proxy.sock", "the proxy: unix:PATH or HOST:PORT")
	cmd.Flags().BoolVar(&detach, "detach", false, "run in the background; return once listening")
	cmd.Flags().IntVar(&listenFD, "listen-fd", 0, "serve the listener inherited as this file descriptor (--detach uses it)")
	_ = cmd.Flags().MarkHidden("listen-fd")
	return cmd
}

func newProxyHealthCmd(a *app) *cobra.Command {
	var addr string
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Exit 0 if the proxy at --addr answers its health check, 1 otherwise",
		Long: `health asks the proxy listening at --addr for ` + egress.HealthPath + ` (a plain, non-proxy
request that needs no token). It is the proxy container's health check.
With --wait it asks again every 10ms until the proxy answers or the time is
up: the agent container's entry point waits for its proxy this way.`,
		Example: `  hobbs proxy health
  hobbs proxy health --addr proxy:3128
  hobbs proxy health --addr unix:/run/hobbs/proxy.sock
  hobbs proxy health --addr 127.0.0.1:3128 --wait 30s`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := egress.WaitHealthy(cmd.Context(), addr, wait); err != nil {
				return err
			}
			a.status("proxy at %s is healthy", addr)
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:3128", "the proxy: HOST:PORT or unix:PATH")
	cmd.Flags().DurationVar(&wait, "wait", 0, "keep asking until the proxy answers or this much time has passed")
	return cmd
}
