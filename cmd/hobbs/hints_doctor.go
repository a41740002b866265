package main

import (
	"github.com/hobbs-agent/hobbs/src/doctor"
	"github.com/hobbs-agent/hobbs/src/egress"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/launcher"
	"github.com/hobbs-agent/hobbs/src/memory"
	"github.com/hobbs-agent/hobbs/src/playbook"
	"github.com/hobbs-agent/hobbs/src/schedule"
	"github.com/hobbs-agent/hobbs/src/vault"
)

// doctorHints words the advice that only hobbs doctor's checks
// (doctorChecks) give: the fix printed under a result, and the "fix" of its
// JSON. A check that reports an error of its package's (the image's
// MissingBase, schedule's CanFire, the engine's) gives that error's
// advice, worded in that package's table.
var doctorHints = map[errs.Kind]words{
	doctor.NoInstance:       say("run: {init} (or point HOBBS_HOME / --instance at your instance)"),
	doctor.LayoutIncomplete: say("run: {init} (creates only what is missing)"),
	doctor.UntrustedEntries: say("inspect each (ls -l); an agent may have planted it: move what it points to back in place if it " +
		"is yours, remove the entry, then run hobbs doctor again"),
	doctor.UnreadablePaths:      say("give your user read access to the instance (chmod u+rX)"),
	doctor.FoundationUnreadable: say("make foundation.md a readable regular file"),
	doctor.FoundationTemplate:   say("run hobbs init --foundation in a terminal, or edit {path}"),
	doctor.QuarantineUnreadable: say("inspect {path}"),
	doctor.QuarantineHolds:      say("inspect them (never with git or direnv there: read the files), then remove {path}"),
	doctor.ModeTooOpen:          say("chmod {mode} {path}"),
	doctor.ConfigInvalid:        say("run: hobbs config validate (lists every problem with its line)"),

	egress.PolicyInvalid: say("fix the lines shown (docs/egress.md has the format); the proxy refuses an invalid policy"),

	memory.DirUnreadable:        say("check the permissions of {path}"),
	memory.UnusableFiles:        say("run: hobbs memory lint (then fix the files it names by hand)"),
	memory.FoundationOverHook:   say("shorten {path} to at most {chars} characters"),
	memory.FoundationOverBudget: say("shorten {path}, or raise memory.context_budget in config.yaml (at most {limit})"),

	vault.KeysDirUnsafe: say("vault/ and vault/keys must be plain directories of the instance: inspect what is there, " +
		"move the real vault back, then run hobbs doctor again"),
	vault.DataDirUnsafe:        say("make vault/data a plain directory (0700)"),
	vault.DataNotPlain:         say("vault/ and vault/data must be plain directories of the instance"),
	vault.IdentityLost:         say("restore vault/keys/identity.txt from your backup"),
	vault.KeysInContainer:      say("start sessions with hobbs run, which mounts over vault/keys"),
	vault.KeyNotRegular:        say("replace it with the key file from your backup"),
	vault.RecipientsUnparsable: say("fix the line it names by hand, or restore vault/keys/recipients.txt from your backup"),
	vault.SelfNotRecipient:     say("add it back: hobbs vault recipients add {key} --label '{label}'"),
	vault.RotationUnfinished:   say("finish it: hobbs vault rotate"),
	vault.StrayFiles:           say("move them out of vault/data; entries are NAME.age with {rule}"),
	vault.RecordUnloadable:     say("unlock the identity on a terminal, or restore vault/keys from your backup"),
	vault.EntryCorrupt:         say("restore vault/data/{name}.age from a backup, or set it again"),
	vault.BindingInvalid: say("hosts take the forms of policy.yaml domains: api.github.com, *.example.com, host:8443; " +
		"in: header, path, query, body (docs/vault.md)"),
	vault.MappedMissing: say("store it: hobbs vault set {entry}, or change {key} in config.yaml"),
	vault.MappedRemoved: say("store it: hobbs vault set {entry}, or change {key} in config.yaml " +
		"(an earlier {entry} is kept encrypted in vault/removed/: move it back to vault/data/{entry}.age)"),
	vault.EnvSecret: say("bind it to the hosts that need it instead (docs/vault.md): in config.yaml remove env.{var} and add\n" +
		"  secrets:\n    {var}:\n      vault: {entry}\n      hosts: [api.example.com]"),

	launcher.DockerOld:       say("upgrade Docker Engine (https://docs.docker.com/engine/install/)"),
	launcher.PodmanOld:       say("upgrade podman"),
	launcher.NoCatatonit:     say("install catatonit (Debian, Ubuntu: sudo apt-get install catatonit; Fedora: sudo dnf install catatonit), or set init_path in containers.conf"),
	launcher.BadInitPath:     say("install catatonit (Debian, Ubuntu: sudo apt-get install catatonit), or correct init_path in {where}"),
	launcher.ImageNotPulled:  say("pull it now ({bin} pull {ref}), or build one here with hobbs build"),
	launcher.ClaudeUnchecked: say("run it by hand: {bin} run --rm --entrypoint sh {image} -c 'command -v claude'"),

	playbook.LintProblems: say("run: hobbs playbook lint"),

	schedule.Unlistable: say("hobbs schedule list"),
}
