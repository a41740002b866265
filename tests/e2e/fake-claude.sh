#!/bin/sh
# FAKE `claude` for the end-to-end tests. Claude Code itself cannot be
# installed offline, so the test base image carries this stand-in at
# /usr/local/bin/claude. It does nothing Claude Code does; it only reports
# what Claude Code would find when started here: its working directory, user,
# environment, the CLAUDE.md files it can read (walking up from the working
# directory, as Claude Code does, plus ~/.claude/CLAUDE.md) and the managed
# settings. One "fake-claude: " line per fact, on stdout.
echo "fake-claude: cwd $(pwd)"
echo "fake-claude: uid $(id -u) gid $(id -g)"
env | sort | sed 's/^/fake-claude: env /'
d=$(pwd)
while :; do
	for f in "$d/CLAUDE.md" "$d/.claude/CLAUDE.md"; do
		[ -r "$f" ] && echo "fake-claude: claude.md $f"
	done
	[ "$d" = / ] && break
	d=$(dirname "$d")
done
if [ -r /etc/claude-code/managed-settings.json ]; then
	echo "fake-claude: managed-settings $(tr -d '\n' < /etc/claude-code/managed-settings.json)"
fi
if [ -r "${CLAUDE_CONFIG_DIR:-$HOME}/.claude.json" ]; then
	echo "fake-claude: state $(tr -d '\n' < "${CLAUDE_CONFIG_DIR:-$HOME}/.claude.json")"
fi
echo "fake-claude: args $*"
