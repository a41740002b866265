#!/bin/sh
# Entry point of the Hobbs image. In a hobbs run session the agent container
# has no network but loopback, and the egress proxy listens on a unix socket
# in a volume both containers mount (HOBBS_PROXY_SOCKET): a relay started
# here gives programs the TCP address in their HTTP_PROXY (HOBBS_PROXY_WAIT,
# host:port). The agent starts while the proxy is still coming up: the
# command is held back until the proxy answers its health check through the
# relay (30 s at most). Then the shell start-up scripts run (they link
# instance skills and agents where Claude Code finds them), then the
# command. The proxy container bypasses this (--entrypoint hobbs).
if [ -n "${HOBBS_PROXY_SOCKET:-}" ]; then
	hobbs proxy relay --listen "${HOBBS_PROXY_WAIT:-127.0.0.1:3128}" --to "unix:$HOBBS_PROXY_SOCKET" 2>/dev/null &
fi
if [ -n "${HOBBS_PROXY_WAIT:-}" ]; then
	if ! hobbs proxy health --addr "$HOBBS_PROXY_WAIT" --wait 30s >/dev/null 2>&1; then
		echo "hobbs: the egress proxy at $HOBBS_PROXY_WAIT did not answer within 30s" >&2
		exit 125
	fi
fi
for f in /etc/hobbs/shell.d/*.sh; do
	[ -r "$f" ] && . "$f"
done
exec "$@"
