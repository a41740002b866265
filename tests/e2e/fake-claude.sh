#!/bin/sh
# FAKE `claude` for the end-to-end tests. Claude Code itself cannot be
# installed offline, so the test base image carries this stand-in at
# /usr/local/bin/claude. It does nothing Claude Code does; it only reports
# what Claude Code would load when started here, by the discovery rules of
# Claude Code's documentation as docs/identity.md states them. One
# "fake-claude: " line per fact, on stdout:
#
#   cwd DIR, uid N gid N, env NAME=VALUE, args ...
#   claude.md SCOPE PATH        instructions it would load (scope: managed,
#                               user, project)
#   skill NAME SCOPE PATH       the skill a name resolves to (managed wins
#                               over user, user over project)
#   skill-shadowed NAME SCOPE PATH   a skill hidden by one of the same name
#   agent NAME SCOPE PATH       the sub-agent a name resolves to (managed,
#                               then project, then user)
#   agent-shadowed NAME SCOPE PATH
#   settings SCOPE JSON         managed-settings.json, managed-settings.d/*,
#                               the user's settings.json (one line each)
#   state JSON                  the state file (.claude.json)
#
# The rules (https://code.claude.com/docs/en/memory, /skills, /sub-agents,
# /settings, /claude-directory):
#   - managed files are under /etc/claude-code: CLAUDE.md,
#     .claude/skills/<name>/SKILL.md, .claude/agents/<name>.md;
#   - the user scope is $CLAUDE_CONFIG_DIR (default ~/.claude): CLAUDE.md,
#     skills/<name>/SKILL.md, agents/<name>.md;
#   - CLAUDE.md and CLAUDE.local.md are read in the working directory and
#     every directory above it; .claude/CLAUDE.md in the project's
#     directories (below);
#   - project skills and agents (.claude/skills, .claude/agents) are read
#     from the working directory up to the repository root (the nearest
#     directory above holding .git). Outside a repository the fake reads
#     the working directory's only: the narrowest reading of the rule, so
#     that nothing Hobbs ships depends on a wider one.
# A skill's name is its directory's; an agent's is its frontmatter name:
# (else its file name).
# A test may put a script of its own at the workspace's .fake-claude-run:
# the fake then runs that instead, with the arguments claude was given (the
# headless playbook run's tests use it to act as Claude Code in print mode).
if [ -f /home/dev/hobbs/workspace/.fake-claude-run ]; then
	exec sh /home/dev/hobbs/workspace/.fake-claude-run "$@"
fi
C=${CLAUDE_CONFIG_DIR:-$HOME/.claude}
M=/etc/claude-code
say() { echo "fake-claude: $*"; }
# Lists below are one path a line.
IFS='
'

say "cwd $(pwd)"
say "uid $(id -u) gid $(id -g)"
env | sort | sed 's/^/fake-claude: env /'

# The project's directories: cwd up to the repository root, or cwd alone.
project=$(pwd)
d=$(pwd)
while :; do
	if [ -e "$d/.git" ]; then
		p=$(pwd)
		project=$p
		while [ "$p" != "$d" ]; do
			p=$(dirname "$p")
			project="$project
$p"
		done
		break
	fi
	[ "$d" = / ] && break
	d=$(dirname "$d")
done

# Instructions: managed, user, then every directory from / down to cwd.
[ -r "$M/CLAUDE.md" ] && say "claude.md managed $M/CLAUDE.md"
[ -r "$C/CLAUDE.md" ] && say "claude.md user $C/CLAUDE.md"
dirs=""
d=$(pwd)
while [ "$d" != / ]; do
	dirs="$d
$dirs"
	d=$(dirname "$d")
done
for d in $dirs; do
	for f in "$d/CLAUDE.md" "$d/CLAUDE.local.md"; do
		[ -r "$f" ] && say "claude.md project $f"
	done
	case "
$project
" in *"
$d
"*) [ -r "$d/.claude/CLAUDE.md" ] && say "claude.md project $d/.claude/CLAUDE.md" ;; esac
done

# skills SCOPE DIR: each DIR/<name>/SKILL.md, the first of a name winning.
seen_skills=" "
skills() {
	for f in "$2"/*/SKILL.md; do
		[ -r "$f" ] || continue
		n=${f%/SKILL.md}
		n=${n##*/}
		case $seen_skills in
		*" $n "*) say "skill-shadowed $n $1 $f" ;;
		*) seen_skills="$seen_skills$n "; say "skill $n $1 $f" ;;
		esac
	done
}
skills managed "$M/.claude/skills"
skills user "$C/skills"
for d in $project; do skills project "$d/.claude/skills"; done

# agents SCOPE DIR: each DIR/<name>.md, the first of a name winning.
seen_agents=" "
agents() {
	for f in "$2"/*.md; do
		[ -r "$f" ] || continue
		n=$(sed -n '1{/^---$/!q};2,/^---$/s/^name:[[:space:]]*//p' "$f" | head -1)
		[ -n "$n" ] || { n=${f##*/}; n=${n%.md}; }
		case $seen_agents in
		*" $n "*) say "agent-shadowed $n $1 $f" ;;
		*) seen_agents="$seen_agents$n "; say "agent $n $1 $f" ;;
		esac
	done
}
agents managed "$M/.claude/agents"
for d in $project; do agents project "$d/.claude/agents"; done
agents user "$C/agents"

for f in "$M/managed-settings.json" "$M"/managed-settings.d/*.json; do
	[ -r "$f" ] && say "settings managed $(tr -d '\n' < "$f")"
done
[ -r "$C/settings.json" ] && say "settings user $(tr -d '\n' < "$C/settings.json")"
if [ -r "${CLAUDE_CONFIG_DIR:-$HOME}/.claude.json" ]; then
	say "state $(tr -d '\n' < "${CLAUDE_CONFIG_DIR:-$HOME}/.claude.json")"
fi
IFS=' '
say "args $*"
