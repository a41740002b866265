package main

import (
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/serve"
)

// serveHints words the advice of package serve.
var serveHints = map[errs.Kind]words{
	serve.RunAsUser: say("as an ordinary user allowed to use the engine: hobbs serve install (docs/setup.md, \"Running as root\")"),
	serve.NoUserManager: say(startUserManager + "; or run hobbs serve --instance {instance} under the supervisor you have " +
		"(it stays in the foreground, logs on stderr and drains on SIGTERM)"),
	serve.NoBotToken:      say("put the token BotFather gave you in the vault: hobbs vault set {entry}"),
	serve.NoTelegram:      say("docs/serve.md, \"Telegram\": make a bot with BotFather, hobbs vault set telegram-bot, then name the entry in config.yaml"),
	serve.OnlyTelegram:    say("hobbs serve pairs telegram"),
	serve.NoTriggerSecret: say("put the webhook's shared secret in the vault: hobbs vault set {entry}"),
	serve.NoMailPassword:  say("put the mailbox's password in the vault (an app password where the provider has two-step sign-in): hobbs vault set {entry}"),
	serve.BadMailCA:       say("tls_ca names a PEM file of the CA certificates your mail server's certificate is signed by; check {path}, or remove tls_ca to trust the system's roots"),
	serve.AlreadyServing: func(f errs.Facts) string {
		stop := "kill {pid}; "
		if f["pid"] == "" || f["pid"] == "0" {
			stop = ""
		}
		return fill("one hobbs serve per instance: stop that one first ("+stop+"systemctl --user stop hobbs-serve "+
			"when hobbs serve install started it), or serve another instance (--instance DIR, with its own serve.listen)", f)
	},
}
