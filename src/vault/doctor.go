package vault

import (
	"context"
	"fmt"
	"strings"

	"github.com/hobbs-agent/hobbs/src/doctor"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/style"
)

// DoctorKeys is doctor's vault.keys check: vault/keys is private, the
// identity parses (unless it is passphrase-protected and no passphrase is at
// hand), recipients.txt parses and lists the identity, and no rotation is
// pending.
func DoctorKeys(_ context.Context, env *doctor.Env) []doctor.Result {
	v := Open(env.Instance)
	v.Audit = nil
	v.Passphrase = nil
	in := env.Instance
	// The vault is the host's alone: a link or special file in its path
	// (vault/ or vault/keys swapped for a link) is never followed.
	has, err := v.exists(in.VaultIdentity())
	if err != nil {
		return []doctor.Result{{Status: doctor.Fail, Message: firstLine(err.Error()),
			Advice: errs.NewAdvice(KeysDirUnsafe)}}
	}
	if !has {
		if InContainer() {
			return []doctor.Result{{Status: doctor.OK, Message: "vault keys are not visible inside the container (by design)"}}
		}
		es, _, err := v.list()
		if err != nil {
			return []doctor.Result{{Status: doctor.Fail, Message: firstLine(err.Error()),
				Advice: errs.NewAdvice(DataDirUnsafe)}}
		}
		if len(es) > 0 {
			return []doctor.Result{{Status: doctor.Fail,
				Message: fmt.Sprintf("%s but no identity at %s", style.N(len(es), "vault entry", "vault entries"), v.rel(in.VaultIdentity())),
				Advice:  errs.NewAdvice(IdentityLost)}}
		}
		return []doctor.Result{{Status: doctor.OK, Message: "vault not initialised (hobbs vault init creates a key)"}}
	}
	if InContainer() {
		return []doctor.Result{{Status: doctor.Fail,
			Message: "vault/keys is visible inside the agent container: the agent could decrypt every secret",
			Advice:  errs.NewAdvice(KeysInContainer)}}
	}
	// Modes of vault/keys and its files are checked by instance.permissions;
	// here: key files must be regular files (no links planted in their place).
	var out []doctor.Result
	for _, p := range []string{in.VaultIdentity(), in.VaultRecipients(), in.VaultIdentityNext(), in.VaultIdentityPrev()} {
		if fi, err := in.FS().Lstat(p); err == nil && !fi.Mode().IsRegular() {
			out = append(out, doctor.Result{Status: doctor.Fail,
				Message: v.rel(p) + " is not a regular file", Advice: errs.NewAdvice(KeyNotRegular)})
		}
	}
	self := ""
	data, _, err := v.readSmall(in.VaultIdentity(), maxKeyFile)
	switch {
	case err != nil:
		out = append(out, doctor.Result{Status: doctor.Fail, Message: err.Error(),
			Advice: errs.NewAdvice(IdentityLost)})
	case isProtected(data):
		out = append(out, doctor.Result{Status: doctor.OK,
			Message: "identity is passphrase-protected (not unlocked by doctor; --deep unlocks it)"})
	default:
		id, err := parseIdentity(data)
		if err != nil {
			out = append(out, doctor.Result{Status: doctor.Fail, Message: v.rel(in.VaultIdentity()) + ": " + err.Error(),
				Advice: errs.NewAdvice(IdentityLost)})
		} else {
			self = id.Recipient().String()
			out = append(out, doctor.Result{Status: doctor.OK, Message: "identity parses (" + self + ")"})
		}
	}
	rs, err := v.readRecipients("vault recipients")
	if err != nil {
		out = append(out, doctor.Result{Status: doctor.Fail, Message: firstLine(err.Error()),
			Advice: errs.NewAdvice(RecipientsUnparsable)})
	} else {
		listed := self == "" || v.Pending() != "" // mid-rotation the old key is listed until step 4
		for _, r := range rs {
			listed = listed || r.Key == self
		}
		if !listed {
			out = append(out, doctor.Result{Status: doctor.Fail,
				Message: "recipients.txt does not list the vault identity " + self,
				Advice:  errs.NewAdvice(SelfNotRecipient, "key", self, "label", SelfLabel)})
		} else {
			out = append(out, doctor.Result{Status: doctor.OK, Message: fmt.Sprintf("recipients.txt parses (%s)", style.N(len(rs), "key", "keys"))})
		}
	}
	if p := v.Pending(); p != "" {
		out = append(out, doctor.Result{Status: doctor.Warn, Message: "an interrupted rotation is pending (" + p + ")",
			Advice: errs.NewAdvice(RotationUnfinished)})
	}
	return out
}

// DoctorEntries is doctor's vault.entries check: vault/data holds only
// entries; with --deep every entry decrypts with the keys on record.
func DoctorEntries(_ context.Context, env *doctor.Env) []doctor.Result {
	v := Open(env.Instance)
	v.Audit = nil
	es, ignored, err := v.list()
	if err != nil {
		return []doctor.Result{{Status: doctor.Fail, Message: firstLine(err.Error()),
			Advice: errs.NewAdvice(DataDirUnsafe)}}
	}
	var out []doctor.Result
	if len(ignored) > 0 {
		out = append(out, doctor.Result{Status: doctor.Warn,
			Message: "not vault entries (ignored): " + strings.Join(ignored, ", "),
			Advice:  errs.NewAdvice(StrayFiles, "rule", NameRule)})
	}
	if !env.Deep || len(es) == 0 {
		msg := style.N(len(es), "entry", "entries")
		if len(es) > 0 {
			msg += " (--deep decrypts each)"
		}
		return append(out, doctor.Result{Status: doctor.OK, Message: msg})
	}
	if has, _ := v.exists(env.Instance.VaultIdentity()); InContainer() && !has {
		return append(out, doctor.Result{Status: doctor.OK,
			Message: style.N(len(es), "entry", "entries") + " (not decryptable inside the container, by design)"})
	}
	rec, err := v.loadRecord("vault doctor")
	if err != nil {
		status := doctor.Fail
		if strings.Contains(err.Error(), "no terminal") {
			status = doctor.Warn
		}
		return append(out, doctor.Result{Status: status, Message: firstLine(err.Error()),
			Advice: errs.NewAdvice(RecordUnloadable)})
	}
	var bad []string
	for _, e := range es {
		ct, _, err := v.readEntry(e.Name)
		if err == nil {
			var val []byte
			val, err = decrypt(e.Name, v.rel(env.Instance.VaultEntry(e.Name)), ct, rec.identities())
			clear(val)
		}
		if err != nil {
			bad = append(bad, e.Name)
			out = append(out, doctor.Result{Status: doctor.Fail, Message: firstLine(err.Error()),
				Advice: errs.NewAdvice(EntryCorrupt, "name", e.Name)})
		}
	}
	if len(bad) == 0 {
		out = append(out, doctor.Result{Status: doctor.OK, Message: style.N(len(es), "entry", "entries") + " decrypted"})
	}
	return out
}

// DoctorMapped is doctor's vault.mapped check: every entry config.yaml's env:
// maps to a variable, or its secrets: binds to hosts, is in the vault, since
// hobbs run refuses to start a session when one is missing; a binding's hosts
// parse. An invalid config is config's own check to report; inside the
// container the vault is not mounted, so there is nothing to compare.
func DoctorMapped(_ context.Context, env *doctor.Env) []doctor.Result {
	if env.Config == nil || InContainer() {
		return nil
	}
	maps := env.Config.VaultEnv()
	var out []doctor.Result
	for _, name := range env.Config.BindingNames() {
		b := env.Config.Secrets[name]
		maps = append(maps, [2]string{name, b.Vault})
		if err := b.Check(); err != nil {
			out = append(out, doctor.Result{Status: doctor.Fail,
				Message: fmt.Sprintf("config.yaml secrets.%s.%v: hobbs run will fail", name, err),
				Advice:  errs.NewAdvice(BindingInvalid)})
		}
	}
	if len(maps) == 0 {
		return nil
	}
	v := Open(env.Instance)
	v.Audit = nil
	for _, m := range maps {
		name, entry := m[0], m[1]
		has, err := v.exists(env.Instance.VaultEntry(entry))
		if err != nil {
			out = append(out, doctor.Result{Status: doctor.Fail, Message: firstLine(err.Error()),
				Advice: errs.NewAdvice(DataNotPlain)})
			continue
		}
		if has {
			continue
		}
		key := "env." + name
		if _, bound := env.Config.Secrets[name]; bound {
			key = "secrets." + name + ".vault"
		}
		kind := MappedMissing
		if v.wasRemoved(entry) {
			kind = MappedRemoved
		}
		out = append(out, doctor.Result{Status: doctor.Fail,
			Message: fmt.Sprintf("config.yaml maps %s to vault:%s, which is not in the vault: hobbs run will fail", name, entry),
			Advice:  errs.NewAdvice(kind, "entry", entry, "key", key)})
	}
	if len(out) == 0 {
		verb := "are"
		if len(maps) == 1 {
			verb = "is"
		}
		out = append(out, doctor.Result{Status: doctor.OK,
			Message: fmt.Sprintf("the %s config.yaml maps %s in the vault", style.N(len(maps), "entry", "entries"), verb)})
	}
	return out
}

// DoctorEnv is doctor's vault.env check: a secret under env: enters the
// agent's environment, where a prompt-injected agent can read it and send it
// to any host the policy allows; bound to its hosts (secrets:) the agent
// holds only a placeholder. Each env: secret is a warning with the binding to
// write.
func DoctorEnv(_ context.Context, env *doctor.Env) []doctor.Result {
	if env.Config == nil || InContainer() {
		return nil
	}
	var out []doctor.Result
	for _, m := range env.Config.VaultEnv() {
		out = append(out, doctor.Result{Status: doctor.Warn,
			Message: fmt.Sprintf("env.%s puts the value of vault:%s in the agent's environment, where the agent can send it to any allowed host", m[0], m[1]),
			Advice:  errs.NewAdvice(EnvSecret, "var", m[0], "entry", m[1])})
	}
	if len(out) == 0 && len(env.Config.Secrets) > 0 {
		out = append(out, doctor.Result{Status: doctor.OK,
			Message: fmt.Sprintf("%s bound to hosts; none in the agent's environment", style.N(len(env.Config.Secrets), "secret", "secrets"))})
	}
	// Where each bound secret may go.
	for _, name := range env.Config.BindingNames() {
		b := env.Config.Secrets[name]
		out = append(out, doctor.Result{Status: doctor.OK,
			Message: fmt.Sprintf("secrets.%s goes only to %s, %s", name, strings.Join(b.Hosts, ", "), b.Where())})
	}
	return out
}

// wasRemoved reports whether vault/removed holds an entry that vault rm
// moved there under name (NAME.TIME.age).
func (v *Vault) wasRemoved(name string) bool {
	des, err := v.fs().ReadDir(v.In.VaultRemoved())
	if err != nil {
		return false
	}
	for _, d := range des {
		if rest, ok := strings.CutPrefix(d.Name(), name+"."); ok && strings.HasSuffix(rest, ".age") && !strings.Contains(strings.TrimSuffix(rest, ".age"), ".") {
			return true
		}
	}
	return false
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
