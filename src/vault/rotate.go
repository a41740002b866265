package vault

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"filippo.io/age"

	"github.com/hobbs-agent/hobbs/src/errs"
)

// RotateOptions configures Rotate.
type RotateOptions struct {
	// Protection of the new identity: by default the same as the current
	// one (and the same passphrase). SetPassphrase asks a new passphrase;
	// NoPassphrase stores the new identity unprotected. Ignored when an
	// interrupted rotation is resumed (its new identity already exists).
	SetPassphrase bool
	NoPassphrase  bool
}

// RotateResult says what Rotate did.
type RotateResult struct {
	OldKey  string `json:"old_public_key"`
	NewKey  string `json:"new_public_key"`
	Entries int    `json:"entries"`
	Resumed bool   `json:"resumed"` // an interrupted rotation was finished
	Retired string `json:"retired"` // where the old identity was moved
}

// Rotate replaces the identity with a new one and re-encrypts every entry,
// following the protocol in the package documentation. It resumes an
// interrupted rotation instead of starting another.
func (v *Vault) Rotate(opt RotateOptions) (res *RotateResult, err error) {
	defer func() {
		d := map[string]any{}
		if res != nil {
			d = map[string]any{"old": res.OldKey, "new": res.NewKey, "entries": res.Entries, "resumed": res.Resumed}
		}
		v.log("vault.rotate", "identity", err, d)
	}()
	if opt.SetPassphrase && opt.NoPassphrase {
		return nil, errs.Usagef("--passphrase and --no-passphrase exclude each other")
	}
	if ok, err := v.exists(v.In.VaultIdentity()); err != nil || !ok {
		return nil, v.missingKeyOr("vault rotate", err)
	}
	if err := v.dirSafe(v.In.VaultData(), true); err != nil {
		return nil, err
	}
	unlock, err := v.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	return v.rotate(opt)
}

// rotation is what a rotation works on: the paths of the identities on
// record, which of the next and previous ones exist (where an interrupted
// rotation stopped), the current identity, the recipients and the entries.
type rotation struct {
	idPath, nextPath, prevPath string
	hasNext, hasPrev           bool
	cur                        *age.X25519Identity
	rs                         []Recipient
	names                      []string
}

// rotate runs the steps of the package documentation's protocol, resuming
// at the one the files on record say an interrupted rotation stopped at.
func (v *Vault) rotate(opt RotateOptions) (*RotateResult, error) {
	r, err := v.rotationState()
	if err != nil {
		return nil, err
	}
	res := &RotateResult{Resumed: r.hasNext || r.hasPrev, Entries: len(r.names)}
	var prev, cur *age.X25519Identity
	if r.hasNext || !r.hasPrev {
		if prev, cur, err = v.installNext(r, opt); err != nil {
			return nil, err
		}
	} else {
		// Interrupted after the commit: identity.txt is already the new key.
		if prev, err = v.loadIdentity(r.prevPath); err != nil {
			return nil, err
		}
		cur = r.cur
	}
	res.OldKey, res.NewKey = prev.Recipient().String(), cur.Recipient().String()
	nrs, err := v.recipientsForNew(r.rs, prev, cur)
	if err != nil {
		return nil, err
	}
	// Drop the old key from every entry (step 5).
	if err := v.reencryptAll(r.names, &record{cur: cur, prev: prev}, nrs, "finalize:"); err != nil {
		return nil, err
	}
	if res.Retired, err = v.retire(r.prevPath); err != nil {
		return nil, err
	}
	v.syncDir(v.In.VaultKeys())
	return res, nil
}

// rotationState reads what a rotation needs: which rotation files exist,
// the current identity, the recipients and the entries' names.
func (v *Vault) rotationState() (*rotation, error) {
	r := &rotation{idPath: v.In.VaultIdentity(), nextPath: v.In.VaultIdentityNext(), prevPath: v.In.VaultIdentityPrev()}
	var err error
	if r.hasNext, err = v.exists(r.nextPath); err != nil {
		return nil, err
	}
	if r.hasPrev, err = v.exists(r.prevPath); err != nil {
		return nil, err
	}
	if r.cur, err = v.loadIdentity(r.idPath); err != nil {
		return nil, err
	}
	if r.rs, err = v.readRecipients("vault rotate"); err != nil {
		return nil, err
	}
	if r.names, err = v.names(); err != nil {
		return nil, err
	}
	return r, nil
}

// installNext brings in the new identity (steps 1 to 3): it creates
// identity.next.txt (or takes the one an interrupted rotation left),
// re-encrypts every entry to the old and the new key, keeps the old
// identity in identity.prev.txt and renames the new one over identity.txt.
// It returns the old identity and the new.
func (v *Vault) installNext(r *rotation, opt RotateOptions) (old, next *age.X25519Identity, err error) {
	curBytes, _, err := v.readSmall(r.idPath, maxKeyFile)
	if err != nil {
		return nil, nil, errs.Wrap(errs.Failure, err, "read %s", v.rel(r.idPath))
	}
	if r.hasPrev {
		prevBytes, _, err := v.readSmall(r.prevPath, maxKeyFile)
		if err != nil {
			return nil, nil, errs.Wrap(errs.Failure, err, "read %s", v.rel(r.prevPath))
		}
		if !bytes.Equal(prevBytes, curBytes) {
			return nil, nil, errs.Failf("inconsistent rotation state: %s, %s and %s all exist and differ",
				v.rel(r.idPath), v.rel(r.nextPath), v.rel(r.prevPath)).
				Advise(RotationDiverged)
		}
	}
	if next, err = v.nextIdentity(r, curBytes, opt); err != nil {
		return nil, nil, err
	}
	if err := v.reencryptAll(r.names, &record{cur: r.cur, next: next}, r.rs, "reencrypt:"); err != nil {
		return nil, nil, err
	}
	// Keep the old identity, then commit the new one.
	if !r.hasPrev {
		if err := v.fs().Create(r.prevPath, curBytes, 0o600); err != nil {
			return nil, nil, errs.Wrap(errs.Failure, err, "keep the old identity")
		}
	}
	if err := v.step("keep-old"); err != nil {
		return nil, nil, err
	}
	if err := v.fs().Rename(r.nextPath, r.idPath); err != nil {
		return nil, nil, errs.Wrap(errs.Failure, err, "install the new identity")
	}
	if err := v.step("commit"); err != nil {
		return nil, nil, err
	}
	return r.cur, next, nil
}

// nextIdentity is the new identity: identity.next.txt of an interrupted
// rotation, else a new one created there, protected like the current one
// (curBytes) unless opt says otherwise.
func (v *Vault) nextIdentity(r *rotation, curBytes []byte, opt RotateOptions) (*age.X25519Identity, error) {
	if r.hasNext {
		next, err := v.loadIdentity(r.nextPath)
		if err != nil {
			return nil, errs.Wrap(errs.Failure, err, "resume rotation").(*errs.Error).
				Advise(DamagedNext, "path", v.rel(r.nextPath))
		}
		return next, nil
	}
	next, err := v.newIdentityFile(r.nextPath, isProtected(curBytes), opt)
	if err != nil {
		return nil, err
	}
	if err := v.step("generate"); err != nil {
		return nil, err
	}
	return next, nil
}

// recipientsForNew makes recipients.txt name the new key instead of the
// old one (step 4), keeping the old key's label and every other recipient,
// and returns the recipients it lists. It writes only when that changes
// the list, so a resumed rotation finds it done.
func (v *Vault) recipientsForNew(rs []Recipient, prev, cur *age.X25519Identity) ([]Recipient, error) {
	oldKey, newKey := prev.Recipient().String(), cur.Recipient().String()
	var nrs []Recipient
	changed, hasNew := false, false
	for _, r := range rs {
		switch r.Key {
		case oldKey:
			if !hasNew {
				nrs = append(nrs, Recipient{Key: newKey, Label: r.Label})
				hasNew = true
			}
			changed = true
		case newKey:
			if !hasNew {
				nrs = append(nrs, r)
				hasNew = true
			}
		default:
			nrs = append(nrs, r)
		}
	}
	if !hasNew {
		nrs = append([]Recipient{{Key: newKey, Label: SelfLabel}}, nrs...)
		changed = true
	}
	if changed {
		if err := v.fs().Write(v.In.VaultRecipients(), FormatRecipients(nrs), 0o600); err != nil {
			return nil, errs.Wrap(errs.Failure, err, "update %s", v.rel(v.In.VaultRecipients()))
		}
	}
	if err := v.step("recipients"); err != nil {
		return nil, err
	}
	return nrs, nil
}

// reencryptAll re-encrypts every entry of names with the identities of rec
// to the keys rec and rs call for, marking the step of each entry (step,
// then its name) for the tests' hook.
func (v *Vault) reencryptAll(names []string, rec *record, rs []Recipient, step string) error {
	keys := v.encryptionKeys(rec, rs)
	for _, n := range names {
		if err := v.reencrypt(n, rec.identities(), keys); err != nil {
			return err
		}
		if err := v.step(step + n); err != nil {
			return err
		}
	}
	return nil
}

// retire moves the old identity (prevPath) to keys/retired/ under a name
// stamped with the time (step 6): kept for backups made before the
// rotation. It returns where it went, relative to the instance.
func (v *Vault) retire(prevPath string) (string, error) {
	if err := v.dirSafe(v.In.VaultRetired(), true); err != nil {
		return "", err
	}
	stamp := v.now().UTC().Format("20060102T150405Z")
	for i := 0; ; i++ {
		fn := "identity-" + stamp + ".txt"
		if i > 0 {
			fn = fmt.Sprintf("identity-%s-%d.txt", stamp, i)
		}
		dst := filepath.Join(v.In.VaultRetired(), fn)
		err := v.link(prevPath, dst)
		if errors.Is(err, fs.ErrExist) && i < 100 {
			continue
		}
		if err != nil {
			return "", errs.Wrap(errs.Failure, err, "retire the old identity")
		}
		if err := v.fs().Remove(prevPath); err != nil {
			return "", errs.Wrap(errs.Failure, err, "retire the old identity")
		}
		return v.rel(dst), nil
	}
}

// newIdentityFile generates an identity and creates path with it, protected
// like the current one unless opt says otherwise.
func (v *Vault) newIdentityFile(path string, protected bool, opt RotateOptions) (*age.X25519Identity, error) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "generate identity")
	}
	plain := formatIdentity(id, v.now())
	defer clear(plain)
	data := plain
	pass := v.pass
	switch {
	case opt.NoPassphrase:
		pass = nil
	case opt.SetPassphrase:
		if pass, err = v.Passphrase("New passphrase for the vault identity", true); err != nil {
			return nil, err
		}
	case !protected:
		pass = nil
	}
	if pass != nil {
		if data, err = protect(plain, pass); err != nil {
			return nil, errs.Wrap(errs.Failure, err, "protect identity")
		}
	}
	if err := v.fs().Create(path, data, 0o600); err != nil {
		return nil, errs.Wrap(errs.Failure, err, "create %s", v.rel(path))
	}
	return id, nil
}

func (v *Vault) syncDir(dir string) {
	if d, err := v.fs().OpenDir(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// AddRecipient adds a public key: every entry is re-encrypted to include it,
// then recipients.txt lists it. Interrupted, running it again finishes.
func (v *Vault) AddRecipient(key, label string) (err error) {
	if err := CheckRecipient(key); err != nil {
		return errs.Usagef("recipient: %v", err).Advise(BadRecipient)
	}
	defer func() { v.log("vault.recipients.add", key, err, map[string]any{"label": cleanLabel(label)}) }()
	return v.changeRecipients(func(rs []Recipient, self string) ([]Recipient, error) {
		for _, r := range rs {
			if r.Key == key {
				return nil, errs.Failf("%s is already a recipient", key)
			}
		}
		return append(rs, Recipient{Key: key, Label: label}), nil
	})
}

// RemoveRecipient removes a public key: every entry is re-encrypted without
// it, then recipients.txt drops it. The vault's own identity cannot be
// removed (rotate replaces it).
func (v *Vault) RemoveRecipient(key string) (err error) {
	defer func() { v.log("vault.recipients.rm", key, err, nil) }()
	return v.changeRecipients(func(rs []Recipient, self string) ([]Recipient, error) {
		if key == self {
			return nil, errs.Failf("%s is the vault's own identity; refusing to remove it", key).
				Advise(RemoveSelf)
		}
		var out []Recipient
		for _, r := range rs {
			if r.Key != key {
				out = append(out, r)
			}
		}
		if len(out) == len(rs) {
			return nil, errs.Failf("%s is not a recipient", key).Advise(NotARecipient)
		}
		return out, nil
	})
}

func (v *Vault) changeRecipients(edit func(rs []Recipient, self string) ([]Recipient, error)) error {
	if ok, err := v.exists(v.In.VaultIdentity()); err != nil || !ok {
		return v.missingKeyOr("vault recipients", err)
	}
	unlock, err := v.lock()
	if err != nil {
		return err
	}
	defer unlock()
	if p := v.Pending(); p != "" {
		return errs.Failf("an interrupted rotation is pending (%s)", p).
			Advise(RotationPending)
	}
	rec, err := v.loadRecord("vault recipients")
	if err != nil {
		return err
	}
	rs, err := v.readRecipients("vault recipients")
	if err != nil {
		return err
	}
	nrs, err := edit(rs, rec.cur.Recipient().String())
	if err != nil {
		return err
	}
	names, err := v.names()
	if err != nil {
		return err
	}
	keys := v.encryptionKeys(rec, nrs)
	for _, n := range names {
		if err := v.reencrypt(n, rec.identities(), keys); err != nil {
			return err
		}
		if err := v.step("rekey:" + n); err != nil {
			return err
		}
	}
	if err := v.fs().Write(v.In.VaultRecipients(), FormatRecipients(nrs), 0o600); err != nil {
		return errs.Wrap(errs.Failure, err, "update %s", v.rel(v.In.VaultRecipients()))
	}
	return nil
}
