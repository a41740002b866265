# hobbs-init.sh — shell start-up inside the Hobbs container. POSIX sh; source
# it from a profile (". hobbs-init.sh") or run it ("sh hobbs-init.sh"). It
# leaves no variables or functions behind and always returns 0.
#
# It makes the instance's own skills and sub-agents visible to Claude Code by
# linking them into Claude Code's user scope (CLAUDE_CONFIG_DIR, the
# per-instance state volume):
#
#   ~/.hobbs/skills/<name>/          → $CLAUDE_CONFIG_DIR/skills/<name>
#   ~/.hobbs/agents/custom/<name>.md → $CLAUDE_CONFIG_DIR/agents/<name>.md
#
# In a headless run of an approved playbook (HOBBS_RUN_ASSETS set) it links
# instead the approved copies of the skills and sub-agents the playbook
# names, which the launcher hands the run read-only, and nothing from the
# instance's shares:
#
#   $HOBBS_RUN_ASSETS/skills/<name>/    → $CLAUDE_CONFIG_DIR/skills/<name>
#   $HOBBS_RUN_ASSETS/agents/<name>.md  → $CLAUDE_CONFIG_DIR/agents/<name>.md
#
# Claude Code reads the user scope whatever the working directory, and the
# workspace (a directory of the host, often a git repository) gets nothing:
# this script never writes there. The framework's skills and agents need no
# link: the image installs them as managed files under /etc/claude-code/.claude
# (docs/identity.md).
#
# Rules: one symbolic link per skill or agent, pointing at the instance file.
# Idempotent. Never replaces a real file or directory, nor a link that points
# anywhere but the instance (each is reported once per start, and skipped).
# A name that collides with a framework skill or agent is not linked: the
# framework's wins, with a warning. Links this script made whose target has
# gone are removed, and so are links to framework agents under ~/hobbs/.claude,
# a path the image does not have (a state volume can hold them from images
# that kept the framework there). Silent when nothing
# changes and nothing is wrong; every change or problem is one line on stderr
# starting with "hobbs-init:".
#
# Paths (environment overrides, for tests and developer mode):
#   HOBBS_HOME            instance directory                (default ~/.hobbs)
#   HOBBS_FRAMEWORK_DIR   the framework's managed directory (default /etc/claude-code/.claude)
#   CLAUDE_CONFIG_DIR     Claude Code's user directory      (default ~/.claude)
#   HOBBS_RUN_ASSETS      a run's approved skills and agents (unset: the instance's)

_hobbs_init() (
	home=${HOBBS_HOME:-$HOME/.hobbs}
	framework=${HOBBS_FRAMEWORK_DIR:-/etc/claude-code/.claude}
	claude=${CLAUDE_CONFIG_DIR:-$HOME/.claude}

	say() { printf 'hobbs-init: %s\n' "$*" >&2; }

	# link_all KIND SRC_DIR DEST_DIR FRAMEWORK_DIR SUFFIX
	# Links each SRC_DIR/<name><SUFFIX> (SUFFIX "" for directories, ".md" for
	# files) to DEST_DIR/<name><SUFFIX>, then removes dangling links into SRC_DIR.
	# DEST_DIR is made when SRC_DIR exists, so that Claude Code watches it from
	# its start and sees links added later in the session.
	link_all() {
		kind=$1 src=$2 dest=$3 fw=$4 suffix=$5
		[ -d "$src" ] || return 0
		if [ -L "$dest" ]; then
			# A whole-directory link: fine if it is the instance's directory,
			# else not ours to touch.
			t=$(readlink "$dest")
			[ "$t" = "$src" ] || [ "$t" = "$src/" ] || say "$dest is a link to $t, not to $src; ${kind}s not linked"
			return 0
		fi
		if [ ! -d "$dest" ]; then
			mkdir -p "$dest" || { say "cannot create $dest; ${kind}s not linked"; return 0; }
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
			if ln -s "$p" "$d"; then
				say "linked $kind ${name%"$suffix"} ($d)"
			else
				say "cannot link $d"
			fi
		done
		unlink_gone "$kind" "$dest" "$src"
		return 0
	}

	# unlink_gone KIND DEST_DIR PREFIX
	# Removes the links in DEST_DIR that point below PREFIX at something gone.
	unlink_gone() {
		[ -d "$2" ] || return 0
		for d in "$2"/*; do
			[ -L "$d" ] || continue
			t=$(readlink "$d")
			case $t in
			"$3"/*)
				if [ ! -e "$t" ] && [ ! -L "$t" ]; then
					rm -f "$d" && say "unlinked $1 ${d##*/}: $t is gone"
				fi ;;
			esac
		done
		return 0
	}

	skills=$home/skills agents=$home/agents/custom
	if [ -n "${HOBBS_RUN_ASSETS:-}" ]; then
		skills=$HOBBS_RUN_ASSETS/skills agents=$HOBBS_RUN_ASSETS/agents
	fi
	link_all skill "$skills" "$claude/skills" "$framework/skills" ""
	link_all agent "$agents" "$claude/agents" "$framework/agents" ".md"
	# Links into ~/hobbs/.claude point at nothing (the image has no such
	# path): they go.
	unlink_gone agent "$claude/agents" "$HOME/hobbs/.claude"
	return 0
)
_hobbs_init || :
unset -f _hobbs_init 2>/dev/null || :
