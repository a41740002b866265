package vault

import (
	"bytes"
	"fmt"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
)

// SessionEnv decrypts the entries that config.yaml maps to environment
// variables (mapping is config's VaultEnv(): pairs of NAME and entry) and
// returns them as "NAME=value" strings, in mapping order. Values exist only in
// memory and in the session's env file (package launcher: a session file,
// on a tmpfs where the host has one, that only the agent's container
// mounts); never in argv or the engine's container configuration. Every entry read is audited ("vault.session",
// by entry name and variable). On any error nothing is returned, and the error
// names the variable and the entry.
//
// A passphrase-protected identity is unlocked with pass (Passphrases: the
// file named by $HOBBS_VAULT_PASSPHRASE_FILE, else the command layer's
// prompt on the terminal); nil: FilePassphrase. An empty mapping touches
// nothing and needs no keys.
func SessionEnv(in instance.Instance, mapping [][2]string, pass PassphraseFunc) ([]string, error) {
	v := Open(in)
	if pass != nil {
		v.Passphrase = pass
	}
	return v.SessionEnv(mapping)
}

// SessionEnv is the package-level SessionEnv with this vault's settings.
func (v *Vault) SessionEnv(mapping [][2]string) ([]string, error) {
	if len(mapping) == 0 {
		return nil, nil
	}
	for _, m := range mapping {
		if !validEnvName(m[0]) {
			return nil, errs.Usagef("env %q: not a valid environment variable name", m[0])
		}
		if !ValidName(m[1]) {
			return nil, errs.Usagef("env %s: vault entry %q is not a valid name (%s)", m[0], m[1], NameRule)
		}
	}
	out := make([]string, 0, len(mapping))
	for _, m := range mapping {
		env, name := m[0], m[1]
		val, err := v.get(name, fmt.Sprintf("vault entry %q", name))
		if err == nil && bytes.IndexByte(val, 0) >= 0 {
			err = errs.Failf("vault entry %q contains a NUL byte, which an environment variable cannot hold", name)
		}
		v.log("vault.session", name, err, map[string]any{"env": env})
		if err != nil {
			clearEnv(out)
			return nil, errs.Wrap(errs.Code(err), err, "env %s (vault:%s)", env, name)
		}
		out = append(out, env+"="+string(val))
		clear(val)
	}
	return out, nil
}

// clearEnv drops references to decrypted values (Go strings cannot be wiped;
// this only shortens their life).
func clearEnv(env []string) {
	for i := range env {
		env[i] = ""
	}
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case i > 0 && c >= '0' && c <= '9':
		default:
			return false
		}
	}
	return true
}

// Mapped is a vault entry a run's configuration maps a variable to: the
// variable, the entry, and the config.yaml key that names it (env.NAME,
// secrets.NAME.vault).
type Mapped struct{ Var, Entry, Key string }

// CheckMapped reports the first of maps whose entry is not in the vault,
// before anything is decrypted or started: an error naming the variable
// and the entry, with the advice doctor's vault.mapped check gives
// (MappedMissing, or MappedRemoved for an entry hobbs vault rm kept).
func CheckMapped(in instance.Instance, maps []Mapped) error {
	if len(maps) == 0 || InContainer() {
		return nil
	}
	v := Open(in)
	for _, m := range maps {
		if !ValidName(m.Entry) {
			continue // SessionEnv says why
		}
		has, err := v.exists(in.VaultEntry(m.Entry))
		if err != nil || has {
			continue
		}
		kind := MappedMissing
		if v.wasRemoved(m.Entry) {
			kind = MappedRemoved
		}
		return errs.Missingf("config.yaml maps %s to vault:%s, which is not in the vault", m.Var, m.Entry).
			Advise(kind, "entry", m.Entry, "key", m.Key)
	}
	return nil
}
