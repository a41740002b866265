#!/bin/sh
# Entry point of the Hobbs image. In a hobbs run session the agent container
# has no network but loopback, and the egress proxy listens on a unix socket
# in a volume both containers mount (HOBBS_PROXY_SOCKET): the relay started
# here gives programs the TCP address in their HTTP_PROXY (HOBBS_PROXY_RELAY,
# host:port). The agent starts while the proxy is still coming up; the relay
# holds a connection that comes before the proxy answers (30 s at most), and
# the launcher ends the session if the proxy fails. With HOBBS_PROXY_WAIT
# (host:port) instead, the command is held back until the proxy there
# answers its health check. Then the session's uid gets a passwd entry
# when the image has none. Then the shell start-up scripts run (they link
# instance skills and agents where Claude Code finds them), then the
# command, through `hobbs session-env`, which gives it the session's
# variables (the proxy's, holding its token, and vault-mapped secrets) from
# the file hobbs run mounts at /run/hobbs-session/env: they are not in the
# container's configuration. The proxy container bypasses this
# (--entrypoint hobbs).
if [ -n "${HOBBS_PROXY_SOCKET:-}" ]; then
	if ! hobbs proxy relay --detach --listen "${HOBBS_PROXY_RELAY:-127.0.0.1:3128}" --to "unix:$HOBBS_PROXY_SOCKET" >/dev/null; then
		echo "hobbs: could not start the relay to the egress proxy" >&2
		exit 125
	fi
fi
if [ -n "${HOBBS_PROXY_WAIT:-}" ]; then
	if ! hobbs proxy health --addr "$HOBBS_PROXY_WAIT" --wait 30s >/dev/null 2>&1; then
		echo "hobbs: the egress proxy at $HOBBS_PROXY_WAIT did not answer within 30s" >&2
		exit 125
	fi
fi
# The session runs as the host user's uid, which the image's /etc/passwd
# (writable for this, dist/Dockerfile) may not know: without an entry,
# shells print "I have no name!" and tools that ask for the user's name
# fail. The entry is added in this container only.
uid=$(id -u) gid=$(id -g)
if ! grep -q "^[^:]*:[^:]*:$uid:" /etc/passwd 2>/dev/null && [ -w /etc/passwd ]; then
	name=hobbs
	grep -q '^hobbs:' /etc/passwd && name=hobbs-$uid
	printf '%s:x:%s:%s:Hobbs agent:%s:/bin/sh\n' "$name" "$uid" "$gid" "${HOME:-/home/dev}" >> /etc/passwd
fi
unset uid gid name
for f in /etc/hobbs/shell.d/*.sh; do
	[ -r "$f" ] && . "$f"
done
exec hobbs session-env -- "$@"
