package serve

import "github.com/hobbs-agent/hobbs/src/errs"

// The kinds of advice serve's errors carry; cmd/hobbs words them
// (hints_serve.go). Facts: entry (a vault entry), instance (the instance's
// directory).
const (
	RunAsUser       errs.Kind = "serve.run-as-user"
	NoUserManager   errs.Kind = "serve.no-user-manager"
	NoBotToken      errs.Kind = "serve.no-bot-token"
	NoTelegram      errs.Kind = "serve.no-telegram"
	OnlyTelegram    errs.Kind = "serve.only-telegram"
	NoTriggerSecret errs.Kind = "serve.no-trigger-secret"
	NoMailPassword  errs.Kind = "serve.no-mail-password" // a mail trigger's password or smtp_password: {entry}
	BadMailCA       errs.Kind = "serve.bad-mail-ca"      // a mail trigger's tls_ca cannot be read: {path}
)
