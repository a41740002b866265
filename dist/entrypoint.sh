#!/bin/sh
# Entry point of the Hobbs image. In a hobbs run session the agent container
# starts while the egress proxy is still coming up: HOBBS_PROXY_WAIT
# (host:port) holds the command back until the proxy answers its health check
# (30 s at most). Then it runs the shell start-up scripts (they link instance
# skills and agents where Claude Code finds them) and the command. The proxy
# container bypasses it (--entrypoint hobbs).
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
