# hobbs-init.sh — shell start-up inside the Hobbs container. POSIX sh; source
# it from a profile (". hobbs-init.sh") or run it ("sh hobbs-init.sh"). It
# leaves no variables or functions behind and always returns 0.
#
# It makes the instance's own skills and sub-agents visible to Claude Code:
#
#   ~/.hobbs/skills/<name>/          → ~/hobbs/workspace/.claude/skills/<name>
#   ~/.hobbs/agents/custom/<name>.md → ~/.claude/agents/<name>.md
#   ~/hobbs/.claude/agents/<name>.md  → ~/.claude/agents/<name>.md  (framework agents)
#
# Claude Code finds skills in .claude/skills of the directory it starts in and
# its parents; sessions start in ~/hobbs/workspace. Sub-agents are linked into
# the user scope (~/.claude/agents, on the per-instance Claude state volume) so
# they are found from any project directory, and the workspace on the host
# gets no extra files for them.
#
# Rules: one symbolic link per skill or agent, pointing at the instance file.
# Idempotent. Never replaces a real file or directory, nor a link that points
# anywhere but the instance (each is reported once per start, and skipped).
# A name that collides with a framework skill or agent (in the image, under
# ~/hobbs/.claude/) is not linked: the framework's wins, with a warning. Links
# this script made whose target has gone are removed. Silent when nothing
# changes and nothing is wrong; every change or problem is one line on stderr
# starting with "hobbs-init:".
#
# Paths (environment overrides, for tests and developer mode):
#   HOBBS_HOME            instance directory           (default ~/.hobbs)
#   HOBBS_WORKSPACE       the session's workspace      (default ~/hobbs/workspace)
#   HOBBS_FRAMEWORK_DIR   the image's Claude directory (default ~/hobbs/.claude)
#   CLAUDE_CONFIG_DIR     Claude Code's user directory (default ~/.claude)

_hobbs_init() (
	home=${HOBBS_HOME:-$HOME/.hobbs}
	workspace=${HOBBS_WORKSPACE:-$HOME/hobbs/workspace}
	framework=${HOBBS_FRAMEWORK_DIR:-$HOME/hobbs/.claude}
	claude=${CLAUDE_CONFIG_DIR:-$HOME/.claude}

	say() { printf 'hobbs-init: %s\n' "$*" >&2; }

	# link_all KIND SRC_DIR DEST_DIR FRAMEWORK_DIR SUFFIX
	# Links each SRC_DIR/<name><SUFFIX> (SUFFIX "" for directories, ".md" for
	# files) to DEST_DIR/<name><SUFFIX>, then removes dangling links into SRC_DIR.
	link_all() {
		kind=$1 src=$2 dest=$3 fw=$4 suffix=$5
		[ -d "$src" ] || return 0
		if [ -L "$dest" ]; then
			# A whole-directory link (the layout older Hobbs versions made):
			# fine if it is the instance's directory, else not ours to touch.
			t=$(readlink "$dest")
			[ "$t" = "$src" ] || [ "$t" = "$src/" ] || say "$dest is a link to $t, not to $src; ${kind}s not linked"
			return 0
		fi
		for p in "$src"/*"$suffix"; do
			[ -e "$p" ] || continue
			name=${p##*/}
			case $name in
			*[!A-Za-z0-9._-]*)
				say "$kind \"$name\" in $src: name has characters other than letters, digits, '.', '_', '-'; not linked"
				continue ;;
			esac
			if [ -z "$suffix" ] && [ ! -d "$p" ]; then
				continue # skills are directories
			fi
			d=$dest/$name
			if [ -e "$fw/$name" ] || [ -L "$fw/$name" ]; then
				if [ -L "$d" ] && [ "$(readlink "$d")" = "$p" ]; then
					rm -f "$d" && say "unlinked $kind $name: the framework has one of the same name"
				fi
				say "$kind ${name%"$suffix"} in $src has the name of a framework $kind ($fw/$name); not linked, rename yours"
				continue
			fi
			if [ -L "$d" ]; then
				t=$(readlink "$d")
				[ "$t" = "$p" ] && continue # already linked
				case $t in
				"$src"/*) ;; # one of ours, pointing at another name: fix it below
				*)
					say "$d is a link to $t, not Hobbs's; not replaced"
					continue ;;
				esac
				rm -f "$d" || continue
			elif [ -e "$d" ]; then
				say "$d exists and is not a link; not replaced (move it to link $p)"
				continue
			fi
			if [ ! -d "$dest" ]; then
				mkdir -p "$dest" || { say "cannot create $dest; ${kind}s not linked"; return 0; }
			fi
			if ln -s "$p" "$d"; then
				say "linked $kind ${name%"$suffix"} ($d)"
			else
				say "cannot link $d"
			fi
		done
		# Remove our links whose instance target is gone.
		for d in "$dest"/*; do
			[ -L "$d" ] || continue
			t=$(readlink "$d")
			case $t in
			"$src"/*)
				if [ ! -e "$t" ] && [ ! -L "$t" ]; then
					rm -f "$d" && say "unlinked $kind ${d##*/}: $t is gone"
				fi ;;
			esac
		done
		return 0
	}

	if [ -d "$workspace" ]; then
		link_all skill "$home/skills" "$workspace/.claude/skills" "$framework/skills" ""
	elif [ -n "$(ls -A "$home/skills" 2>/dev/null)" ]; then
		say "no workspace at $workspace; instance skills not linked"
	fi
	# Framework agents live in the image beside the identity; Claude Code looks
	# for sub-agents only in the project's and the user's .claude/agents, so
	# they are linked into the user scope too (nothing can collide with them).
	link_all agent "$framework/agents" "$claude/agents" "$framework/.none" ".md"
	link_all agent "$home/agents/custom" "$claude/agents" "$framework/agents" ".md"
	return 0
)
_hobbs_init || :
unset -f _hobbs_init 2>/dev/null || :
