package main

import (
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/vault"
)

// vaultHints are the words of the vault's advice (src/vault/kinds.go).
var vaultHints = map[errs.Kind]words{
	vault.NoTerminal: say("run on a terminal, or set {env} to a file holding the passphrase"),
	vault.Busy:       say("wait for it to finish (a rotate can take a while) and try again"),
	vault.UnavailableInContainer: func(errs.Facts) string { // its braces are YAML, not facts
		return "secrets reach the agent only as config.yaml names them, decrypted on the host by hobbs run: " +
			"bound to hosts (secrets: {NAME: {vault: ENTRY, hosts: [HOST]}}: the agent holds a placeholder) " +
			"or in its environment (env: {NAME: vault:ENTRY})"
	},
	vault.NoIdentity:        say("run: hobbs vault init — or restore vault/keys/identity.txt from your backup"),
	vault.DamagedProtected:  say("the file is damaged; restore it from your backup"),
	vault.DamagedIdentity:   say("the identity file is damaged; restore it from your backup"),
	vault.NoRecipients:      say("restore it from your backup; it lists the public keys entries are encrypted to"),
	vault.BadRecipientsLine: say("fix that line by hand; Hobbs never rewrites a file it cannot parse"),
	vault.NotADirectory:     say("replace it with a real directory (mode 0700)"),
	vault.NoEntry:           say("see the entries with: hobbs vault list"),
	vault.OtherKeys:         say("it was written for other keys: restore the identity it was encrypted to, or set the entry again"),
	vault.CorruptEntry:      say("restore the file from a backup, or set the entry again"),
	vault.InitInContainer:   say("run hobbs vault init on the host, then map entries into sessions with env: in config.yaml"),
	vault.UnprotectedExists: say("hobbs vault rotate --passphrase replaces it with a protected one"),
	vault.RecipientsOnly:    say("restore identity.txt from your backup; init will not guess"),
	vault.EntriesWithoutKey: say("restore vault/keys/identity.txt from your backup, or run hobbs vault init --force to start a new identity (those entries stay unreadable)"),
	vault.EmptyValue:        say("pipe the value on stdin or give --from-file FILE"),
	vault.EntryExists:       say("remove it first (hobbs vault rm {name}) or pick another name"),
	vault.BadName:           say("a name is a label, never a path: e.g. github-token, smtp.password"),
	vault.RotationDiverged:  say("keep copies of all three; every entry decrypts with one of them (try age -d -i)"),
	vault.DamagedNext:       say("{path} holds the new identity of an interrupted rotate; if it is damaged, delete it (no entry depends on it alone yet) and run rotate again"),
	vault.BadRecipient:      say("give an age public key, as printed by age-keygen -y"),
	vault.RemoveSelf:        say("to replace the identity, run: hobbs vault rotate"),
	vault.NotARecipient:     say("see them with: hobbs vault recipients list"),
	vault.RotationPending:   say("finish it first: hobbs vault rotate"),
}
