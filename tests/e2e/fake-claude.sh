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
#
# Print mode (-p, a headless run) is faked too, by the CLI reference, the
# settings, permissions, hooks and headless pages (https://code.claude.com/
# docs/en/cli-reference, /settings, /permissions, /permission-modes, /hooks,
# /headless); see print_mode below. Its facts go to stderr, the result to
# stdout.
C=${CLAUDE_CONFIG_DIR:-$HOME/.claude}
M=/etc/claude-code
W=/home/dev/hobbs/workspace
say() { echo "fake-claude: $*"; }

# print_mode fakes `claude -p PROMPT [flags]`, as a headless run starts it:
#
#   - the settings it loads: the managed files (managed-settings.json, then
#     managed-settings.d/*.json), and of the user ($CLAUDE_CONFIG_DIR/
#     settings.json), project (.claude/settings.json) and local
#     (.claude/settings.local.json) files those --setting-sources names
#     (default: all three);
#   - hooks: the SessionStart command hooks of the loaded files whose
#     matcher is empty or "startup", run before the prompt with their JSON
#     input on stdin; with allowManagedHooksOnly true in a managed file only
#     the managed ones (the user, project and local ones are reported as
#     blocked);
#   - permissions: the allow rules of the loaded files and --allowedTools;
#     the mode from --permission-mode, else the highest-ranking file's
#     defaultMode (managed, local, project, user), and bypassPermissions
#     refused when a managed file sets disableBypassPermissionsMode
#     "disable";
#   - the turn and cost limits: a scenario that takes more than --max-turns
#     turns ends with error_max_turns, one that costs more than
#     --max-budget-usd with error_max_budget_usd, exit 1;
#   - the output: with --output-format json one line, the result message
#     the Agent SDK reference shapes (type, subtype, is_error, duration_ms,
#     duration_api_ms, num_turns, result on success, errors otherwise,
#     session_id, total_cost_usd); text prints the result alone.
#
# The settings files are read line by line (the files the tests and the
# image carry are pretty-printed JSON): not a JSON parser, a fake.
#
# An interactive session's conversation is the test's too: a script at the
# workspace's .fake-claude-session, run last with FAKE_ARGS set (what
# Claude Code would write of the conversation, a resumed or forked one, is
# what the script writes).
#
# What the run does is the test's: a script at the workspace's
# .fake-claude-run, run with FAKE_PROMPT, FAKE_ARGS and FAKE_STDIN (the
# file holding what was piped in) set, its stderr
# passed on, its stdout the result's text, except lines "@turns N", "@cost
# USD" and "@subtype NAME" (default: 1 turn, 0.01, success).
print_mode() {
	args="$*"
	prompt="" fmt=text sources=user,project,local mode="" maxturns="" budget="" allowed=""
	while [ $# -gt 0 ]; do
		case $1 in
		-p | --print)
			shift
			case ${1:-} in -* | "") ;; *) prompt=$1; shift;; esac
			continue;;
		--output-format) fmt=$2;;
		--setting-sources) sources=$2;;
		--permission-mode) mode=$2;;
		--max-turns) maxturns=$2;;
		--max-budget-usd) budget=$2;;
		--allowedTools | --allowed-tools | --disallowedTools | --disallowed-tools)
			flag=$1
			shift
			while [ $# -gt 0 ]; do
				case $1 in --*) break;; esac
				case $flag in --allowed*) allowed="$allowed
cli $1";; esac
				shift
			done
			continue;;
		*) shift; continue;;
		esac
		shift 2
	done
	say "print args $args" >&2
	say "print prompt $prompt" >&2
	# Piped content ("cat file | claude -p query", the CLI reference) is
	# read whole when standard input is not a terminal; the scenario finds
	# it in the file FAKE_STDIN names.
	stdin=$(mktemp)
	[ -t 0 ] || cat > "$stdin"
	say "print stdin $(wc -c < "$stdin" | tr -d ' ') bytes" >&2

	files=""
	for f in "$M/managed-settings.json" "$M"/managed-settings.d/*.json; do
		[ -r "$f" ] && files="$files
managed $f"
	done
	case ",$sources," in *,user,*) files="$files
user $C/settings.json";; esac
	case ",$sources," in *,project,*) files="$files
project $(pwd)/.claude/settings.json";; esac
	case ",$sources," in *,local,*) files="$files
local $(pwd)/.claude/settings.local.json";; esac

	managed_hooks_only="" bypass_off=""
	for f in "$M/managed-settings.json" "$M"/managed-settings.d/*.json; do
		[ -r "$f" ] || continue
		tr -d '\n' < "$f" | grep -q '"allowManagedHooksOnly"[[:space:]]*:[[:space:]]*true' && managed_hooks_only=1
		tr -d '\n' < "$f" | grep -q '"disableBypassPermissionsMode"[[:space:]]*:[[:space:]]*"disable"' && bypass_off=1
	done

	filemode="" ifs=$IFS
	IFS='
'
	for entry in $files; do
		scope=${entry%% *} f=${entry#* }
		[ -r "$f" ] || continue
		say "settings $scope $f" >&2
		m=$(sed -n 's/.*"defaultMode"[[:space:]]*:[[:space:]]*"\([A-Za-z]*\)".*/\1/p' "$f" | tail -1)
		[ -n "$m" ] && filemode="$filemode
$scope $m"
		for rule in $(awk '/"allow"[[:space:]]*:/ { inallow = 1; sub(/.*"allow"[[:space:]]*:/, "") }
			inallow { s = $0; while (match(s, /"[^"]*"/)) { print substr(s, RSTART + 1, RLENGTH - 2); s = substr(s, RSTART + RLENGTH) }
				if ($0 ~ /\]/) inallow = 0 }' "$f"); do
			allowed="$allowed
$scope $rule"
		done
		for hook in $(awk '/"(SessionStart|SubagentStart|SubagentStop|PreToolUse|PostToolUse|UserPromptSubmit|Stop|SessionEnd|Notification|PreCompact)"[[:space:]]*:/ {
				match($0, /"[A-Za-z]+"/); ev = substr($0, RSTART + 1, RLENGTH - 2); matcher = "" }
			/"matcher"[[:space:]]*:/ { matcher = $0; sub(/^[^:]*:[[:space:]]*"/, "", matcher); sub(/".*$/, "", matcher) }
			/"command"[[:space:]]*:/ { c = $0; sub(/^[^:]*:[[:space:]]*"/, "", c); sub(/"[[:space:]]*,?[[:space:]]*$/, "", c); print ev "\t" matcher "\t" c }' "$f"); do
			ev=${hook%%	*} rest=${hook#*	}
			matcher=${rest%%	*} cmd=${rest#*	}
			if [ "$scope" != managed ] && [ -n "$managed_hooks_only" ]; then
				say "hook-blocked $scope $ev $cmd" >&2
				continue
			fi
			case $ev:$matcher in SessionStart: | SessionStart:*startup*) ;; *) continue;; esac
			say "hook $scope $ev $cmd" >&2
			echo '{"hook_event_name":"SessionStart","source":"startup"}' | sh -c "$cmd" >/dev/null 2>&1
		done
	done
	for rule in $allowed; do
		say "allow $rule" >&2
	done
	IFS=$ifs
	if [ -z "$mode" ]; then
		for s in managed local project user; do
			mode=$(echo "$filemode" | sed -n "s/^$s //p" | tail -1)
			[ -n "$mode" ] && break
		done
	fi
	if [ "$mode" = bypassPermissions ] && [ -n "$bypass_off" ]; then
		say "bypassPermissions refused: disableBypassPermissionsMode" >&2
		mode=default
	fi
	say "permission-mode ${mode:-default}" >&2
	if [ -r "$C/.credentials.json" ]; then
		say "credentials $(tr -d '\n' < "$C/.credentials.json")" >&2
	fi
	say "state $(ls -A "$C" | tr '\n' ' ')" >&2

	out=$(mktemp)
	if [ -f "$W/.fake-claude-run" ]; then
		FAKE_PROMPT=$prompt FAKE_ARGS=$args FAKE_STDIN=$stdin sh "$W/.fake-claude-run" > "$out"
	else
		echo "fake-claude: no scenario (.fake-claude-run)" > "$out"
	fi
	turns=$(sed -n 's/^@turns //p' "$out" | tail -1)
	cost=$(sed -n 's/^@cost //p' "$out" | tail -1)
	subtype=$(sed -n 's/^@subtype //p' "$out" | tail -1)
	turns=${turns:-1} cost=${cost:-0.01} subtype=${subtype:-success}
	if [ -n "$maxturns" ] && [ "$turns" -gt "$maxturns" ]; then
		subtype=error_max_turns turns=$maxturns
	fi
	if [ -n "$budget" ] && awk "BEGIN { exit !($cost > $budget) }"; then
		subtype=error_max_budget_usd
	fi
	text=$(grep -v '^@' "$out")
	rm -f "$out" "$stdin"
	is_error=false rc=0
	[ "$subtype" = success ] || { is_error=true; rc=1; }
	if [ "$fmt" = json ]; then
		if [ "$subtype" = success ]; then
			body="\"result\":$(printf '%s' "$text" | json_str)"
		else
			body="\"errors\":[$(printf '%s' "Reached the limit: $subtype" | json_str)]"
		fi
		echo "{\"type\":\"result\",\"subtype\":\"$subtype\",\"is_error\":$is_error,\"duration_ms\":10,\"duration_api_ms\":5,\"num_turns\":$turns,$body,\"session_id\":\"fake-$$\",\"total_cost_usd\":$cost}"
	else
		printf '%s\n' "$text"
	fi
	return $rc
}

# json_str writes its input as a JSON string.
json_str() {
	awk 'BEGIN { ORS = ""; printf "\"" }
		{ gsub(/\\/, "\\\\"); gsub(/"/, "\\\""); gsub(/\t/, "\\t"); gsub(/\r/, "\\r"); if (NR > 1) printf "\\n"; printf "%s", $0 }
		END { printf "\"" }'
}

for a in "$@"; do
	case $a in -p | --print) print_mode "$@"; exit $?;; esac
done
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
if [ -f "$W/.fake-claude-session" ]; then
	FAKE_ARGS=$* sh "$W/.fake-claude-session"
fi
