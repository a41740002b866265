package memory

import (
	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/errs"
)

// refuseSecret returns an error when text (what names it: "memory text",
// "--source") holds something the audit redactor recognises as a secret.
// Memories are plaintext and loaded into every session, so a secret belongs
// in the vault and the memory says where it lives. The error names the kind
// of secret, never the text.
func refuseSecret(what, text string) error {
	kind := audit.SecretKind(text)
	if kind == "" {
		return nil
	}
	return errs.Usagef("the %s looks like a secret (%s); memories are stored in plaintext and loaded into every session, so it was not stored", what, kind).
		Advise(LooksLikeSecret)
}
