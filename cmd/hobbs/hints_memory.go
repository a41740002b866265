package main

import (
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/memory"
)

// memoryHints words the advice of package memory.
var memoryHints = map[errs.Kind]words{
	memory.Locked:          say("another memory command, here or in a session, still holds memory/.lock; try again"),
	memory.Unparsable:      say("fix the file by hand (Hobbs never rewrites a file it cannot parse); hobbs memory lint lists every problem"),
	memory.NoMemory:        say("see the ids with: hobbs memory list --all"),
	memory.BadID:           say("ids look like mem_20260122_001; see hobbs memory list"),
	memory.BadIDAll:        say("ids look like mem_20260122_001; see hobbs memory list --all"),
	memory.NameClash:       say("two files share a name; rename one by hand"),
	memory.EmptyText:       say("give the text as an argument or on stdin with -"),
	memory.BadType:         say("one word: fact, preference, decision…"),
	memory.BadTag:          say("tags are words without spaces or commas"),
	memory.SupersedeNewest: say("supersede the newest one: hobbs memory supersede {newer}"),
	memory.ReinforceNewer:  say("reinforce the newer memory: hobbs memory reinforce {newer}"),
	memory.UseNewer:        say("work with the newer memory: hobbs memory show {newer}"),
	memory.HasCandidates: say("{id} is stored. If a candidate says the same: hobbs memory archive {id}, then hobbs memory " +
		"reinforce CANDIDATE. If it changes what a candidate says: hobbs memory archive {id}, then hobbs memory " +
		"supersede CANDIDATE TEXT. Otherwise keep both."),
	memory.BadRegexp:       say("RE2 syntax: https://github.com/google/re2/wiki/Syntax"),
	memory.BadFormat:       say("text, hook or json"),
	memory.BadStatus:       say("active, archived or superseded"),
	memory.NoAgent:         say("agents live in agents/<name>/; see hobbs agent list"),
	memory.NothingToRecall: say("name what to look for, e.g. hobbs memory recall \"car insurance\"; for an exact text: hobbs memory search"),
	memory.LooksLikeSecret: say("keep the secret in the vault, on the host: hobbs vault set NAME; then remember only where it lives, " +
		"e.g. hobbs memory add \"The GitHub token is in the vault as github-token\""),
	memory.ForgetUnreadable: say("Hobbs does not remove a file it cannot read: delete it by hand, then run " +
		"hobbs memory rm {id} --purge to take its text out of the history"),
	memory.FilesToFix:       say("fix the files by hand; Hobbs never rewrites a file it cannot parse"),
	memory.NoMemoryToForget: say("see the ids with: hobbs memory list --all; to clean the history of a memory already removed: hobbs memory rm {id} --purge"),
}
