#!/bin/sh
# Entry point of the Hobbs image: run the shell start-up scripts (they link
# instance skills and agents where Claude Code finds them), then the command.
# The proxy container bypasses it (--entrypoint hobbs).
for f in /etc/hobbs/shell.d/*.sh; do
	[ -r "$f" ] && . "$f"
done
exec "$@"
