package vault

import "github.com/hobbs-agent/hobbs/src/errs"

// The situations the vault's errors advise on; the command layer words
// them (cmd/hobbs/hints_vault.go). A comment names the facts a kind
// carries, if any.
const (
	NoTerminal             errs.Kind = "vault.no-terminal"         // env: the passphrase file's variable
	Busy                   errs.Kind = "vault.busy"                // another process holds the lock
	UnavailableInContainer errs.Kind = "vault.in-container"        // the vault asked for inside the agent container
	NoIdentity             errs.Kind = "vault.no-identity"         // no identity on the host
	DamagedProtected       errs.Kind = "vault.damaged-protected"   // a protected identity that does not decrypt
	DamagedIdentity        errs.Kind = "vault.damaged-identity"    // an identity that does not parse
	NoRecipients           errs.Kind = "vault.no-recipients"       // recipients.txt missing
	BadRecipientsLine      errs.Kind = "vault.bad-recipients-line" // recipients.txt does not parse
	NotADirectory          errs.Kind = "vault.not-a-directory"     // a vault directory is a link or a file
	NoEntry                errs.Kind = "vault.no-entry"            // no entry of that name
	OtherKeys              errs.Kind = "vault.other-keys"          // an entry encrypted to keys the vault lacks
	CorruptEntry           errs.Kind = "vault.corrupt-entry"       // an entry that is not an age file
	InitInContainer        errs.Kind = "vault.init-in-container"   // vault init inside the agent container
	UnprotectedExists      errs.Kind = "vault.unprotected-exists"  // init --passphrase over a plain identity
	RecipientsOnly         errs.Kind = "vault.recipients-only"     // recipients.txt without an identity
	EntriesWithoutKey      errs.Kind = "vault.entries-without-key" // entries but no identity to read them
	EmptyValue             errs.Kind = "vault.empty-value"         // set with nothing to store
	EntryExists            errs.Kind = "vault.entry-exists"        // name: the rename's target
	BadName                errs.Kind = "vault.bad-name"            // an entry name outside the rule
	RotationDiverged       errs.Kind = "vault.rotation-diverged"   // identity, next and prev all differ
	DamagedNext            errs.Kind = "vault.damaged-next"        // path: the next identity of a resumed rotate
	BadRecipient           errs.Kind = "vault.bad-recipient"       // not an age public key
	RemoveSelf             errs.Kind = "vault.remove-self"         // the vault's own key as a recipient to remove
	NotARecipient          errs.Kind = "vault.not-a-recipient"     // a key to remove that is not listed
	RotationPending        errs.Kind = "vault.rotation-pending"    // a recipients change during a rotation
)

// The kinds of advice the vault's doctor checks give; cmd/hobbs words them
// (hints_doctor.go). Facts: name and entry (a vault entry), key (the vault's
// own recipient, or config.yaml's key that names an entry), label (the
// recipient's label), rule (NameRule), var (a variable under env:).
const (
	KeysDirUnsafe        errs.Kind = "vault.keys-dir-unsafe"
	DataDirUnsafe        errs.Kind = "vault.data-dir-unsafe"
	DataNotPlain         errs.Kind = "vault.data-not-plain"
	IdentityLost         errs.Kind = "vault.identity-lost"
	KeysInContainer      errs.Kind = "vault.keys-in-container"
	KeyNotRegular        errs.Kind = "vault.key-not-regular"
	RecipientsUnparsable errs.Kind = "vault.recipients-unparsable"
	SelfNotRecipient     errs.Kind = "vault.self-not-recipient"
	RotationUnfinished   errs.Kind = "vault.rotation-unfinished"
	StrayFiles           errs.Kind = "vault.stray-files"
	RecordUnloadable     errs.Kind = "vault.record-unloadable"
	EntryCorrupt         errs.Kind = "vault.entry-corrupt"
	BindingInvalid       errs.Kind = "vault.binding-invalid"
	MappedMissing        errs.Kind = "vault.mapped-missing"
	MappedRemoved        errs.Kind = "vault.mapped-removed"
	EnvSecret            errs.Kind = "vault.env-secret"
)
