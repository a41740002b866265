package vault

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"filippo.io/age"
	"filippo.io/age/armor"
	"golang.org/x/sys/unix"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/safefile"
	"github.com/hobbs-agent/hobbs/src/style"
)

// MaxValueSize is the largest value an entry may hold (1 MiB): the vault is
// for tokens and passwords, not files.
const MaxValueSize = 1 << 20

// maxEntryFile bounds what is read from an entry file: the value plus age's
// header and per-chunk overhead.
const maxEntryFile = MaxValueSize + 256<<10

// SelfLabel labels the vault's own identity in recipients.txt.
const SelfLabel = "vault identity"

// lockTimeout is how long an operation waits for another writer.
const lockTimeout = 10 * time.Second

// ErrNotFound is wrapped by errors about an entry that does not exist.
var ErrNotFound = errors.New("not found")

// Vault is the vault of one instance. Build it with Open.
type Vault struct {
	In    instance.Instance
	Audit *audit.Logger
	// Passphrase is asked when an identity is passphrase-protected.
	Passphrase PassphraseFunc
	// Hook is for tests: it is called after each step of a rotation or a
	// recipients change ("generate", "reencrypt:NAME", "keep-old", "commit",
	// "recipients", "finalize:NAME", "rekey:NAME"); an error stops the
	// operation there, as a crash would.
	Hook func(step string) error
	Now  func() time.Time
	// AuditFailed, when set, is told when an audit record could not be
	// written (the operation itself stands).
	AuditFailed func(error)

	pass []byte // passphrase that opened the identity, reused for its siblings
}

// Open returns the vault of in, logging to its audit log and asking
// passphrases with FilePassphrase.
func Open(in instance.Instance) *Vault {
	return &Vault{In: in, Audit: audit.New(in.FS(), in.AuditLog()), Passphrase: FilePassphrase, Now: time.Now}
}

// InContainer reports whether hobbs runs inside the agent container
// (HOBBS_CONTEXT=container, set by the image).
func InContainer() bool { return instance.InContainer() }

func (v *Vault) now() time.Time {
	if v.Now != nil {
		return v.Now()
	}
	return time.Now()
}

func (v *Vault) rel(p string) string { return filepath.ToSlash(v.In.Rel(p)) }

// fs is the instance's safe-open layer: every path of the vault (keys, data,
// removed, rotation files, the lock) is opened through it, so a link or
// special file anywhere below the instance root (vault/ itself swapped for a
// link included) is refused, never followed.
func (v *Vault) fs() safefile.Root { return v.In.FS() }

// log appends an audit entry; err decides the outcome. Values are never
// passed here: subjects are entry names or public keys.
func (v *Vault) log(event, subject string, err error, detail map[string]any) {
	if v.Audit == nil {
		return
	}
	e := audit.Entry{Event: event, Subject: subject, Outcome: "ok", Detail: detail}
	if err != nil {
		e.Outcome = "error"
		if e.Detail == nil {
			e.Detail = map[string]any{}
		}
		e.Detail["error"] = strings.SplitN(err.Error(), "\n", 2)[0]
	}
	if err := v.Audit.Log(e); err != nil && v.AuditFailed != nil {
		v.AuditFailed(err)
	}
}

func (v *Vault) step(name string) error {
	if v.Hook == nil {
		return nil
	}
	if err := v.Hook(name); err != nil {
		return errs.Wrap(errs.Failure, err, "interrupted at step %s", name)
	}
	return nil
}

// lock takes the vault's instance lock.
func (v *Vault) lock() (func(), error) {
	if err := v.fs().MkdirAll(filepath.Dir(v.In.Lock("vault")), 0o700); err != nil {
		return nil, errs.Wrap(errs.Failure, err, "create lock directory")
	}
	unlock, err := v.fs().Lock(v.In.Lock("vault"), lockTimeout)
	if errors.Is(err, safefile.ErrLockTimeout) {
		return nil, errs.Failf("the vault is busy: another hobbs process holds its lock").
			Advise(Busy)
	}
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "lock the vault")
	}
	return unlock, nil
}

// missingKey explains a missing identity: inside the container that is by
// design; on the host the vault is not initialised or the key was lost.
func (v *Vault) missingKey(what string) error {
	if InContainer() {
		return errs.Failf("%s: the vault is not available inside the agent container", what).
			Advise(UnavailableInContainer)
	}
	return errs.Failf("%s: no vault identity at %s", what, v.rel(v.In.VaultIdentity())).
		Advise(NoIdentity)
}

// exists reports whether p is there (as anything: a link counts, and is
// refused when read). Any error but "no such file" (a link or a file where a
// directory of the path should be) is returned: the vault never takes a
// path it cannot inspect for a missing one.
func (v *Vault) exists(p string) (bool, error) {
	_, err := v.fs().Lstat(p)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, errs.Wrap(errs.Failure, err, "inspect %s", v.rel(p))
}

// readSmall reads a regular file (no symlink, FIFO or device, no link in the
// path below the instance root) of at most max bytes.
func (v *Vault) readSmall(p string, max int64) ([]byte, fs.FileInfo, error) {
	f, err := v.fs().Open(p)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, nil, err
	}
	if int64(len(data)) > max {
		return nil, nil, fmt.Errorf("%s is larger than %d bytes", p, max)
	}
	return data, fi, nil
}

// loadIdentity reads and parses one identity file, unlocking it with the
// passphrase when it is protected.
func (v *Vault) loadIdentity(path string) (*age.X25519Identity, error) {
	rel := v.rel(path)
	data, _, err := v.readSmall(path, maxKeyFile)
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "read %s", rel)
	}
	plain := data
	if isProtected(data) {
		if v.pass != nil {
			plain, err = unprotect(data, v.pass)
		}
		if v.pass == nil || errors.Is(err, errWrongPassphrase) {
			if v.Passphrase == nil {
				return nil, errs.Failf("%s is passphrase-protected and no passphrase source is set", rel)
			}
			pass, perr := v.Passphrase(fmt.Sprintf("Passphrase for %s", rel), false)
			if perr != nil {
				return nil, perr
			}
			plain, err = unprotect(data, pass)
			if err == nil {
				v.pass = pass
			}
		}
		if errors.Is(err, errWrongPassphrase) {
			return nil, errs.Failf("%s: wrong passphrase", rel)
		}
		if err != nil {
			return nil, errs.Failf("%s: cannot decrypt the protected identity: %v", rel, err).
				Advise(DamagedProtected)
		}
		defer clear(plain)
	}
	id, err := parseIdentity(plain)
	if err != nil {
		return nil, errs.Failf("%s: %v", rel, err).Advise(DamagedIdentity)
	}
	return id, nil
}

// record is the set of keys on record: the identity and, during a rotation,
// the next or previous one.
type record struct {
	cur, next, prev *age.X25519Identity
}

func (r *record) identities() []age.Identity {
	out := []age.Identity{r.cur}
	if r.next != nil {
		out = append(out, r.next)
	}
	if r.prev != nil {
		out = append(out, r.prev)
	}
	return out
}

// loadRecord loads every identity on record. what names the operation for
// errors ("vault entry \"x\"").
func (v *Vault) loadRecord(what string) (*record, error) {
	if ok, err := v.exists(v.In.VaultIdentity()); err != nil || !ok {
		return nil, v.missingKeyOr(what, err)
	}
	r := &record{}
	var err error
	if r.cur, err = v.loadIdentity(v.In.VaultIdentity()); err != nil {
		return nil, err
	}
	for _, o := range []struct {
		path string
		id   **age.X25519Identity
	}{{v.In.VaultIdentityNext(), &r.next}, {v.In.VaultIdentityPrev(), &r.prev}} {
		ok, err := v.exists(o.path)
		if err != nil {
			return nil, err
		}
		if ok {
			if *o.id, err = v.loadIdentity(o.path); err != nil {
				return nil, err
			}
		}
	}
	return r, nil
}

// missingKeyOr is missingKey, or err when the identity's path could not be
// inspected (a link where a vault directory should be).
func (v *Vault) missingKeyOr(what string, err error) error {
	if err != nil {
		return err
	}
	return v.missingKey(what)
}

// readRecipients reads recipients.txt. A file that does not parse is
// reported with its line and left alone.
func (v *Vault) readRecipients(what string) ([]Recipient, error) {
	p := v.In.VaultRecipients()
	if ok, err := v.exists(p); err != nil {
		return nil, err
	} else if !ok {
		if ok, err := v.exists(v.In.VaultIdentity()); err != nil || !ok {
			return nil, v.missingKeyOr(what, err)
		}
		return nil, errs.Failf("%s: %s is missing", what, v.rel(p)).
			Advise(NoRecipients)
	}
	data, _, err := v.readSmall(p, maxKeyFile)
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "read %s", v.rel(p))
	}
	rs, err := ParseRecipients(data)
	if err != nil {
		var le *LineError
		if errors.As(err, &le) {
			return nil, errs.Failf("%s:%d: %v", p, le.Line, le.Err).Advise(BadRecipientsLine)
		}
		return nil, errs.Failf("%s: %v", p, err).Advise(BadRecipientsLine)
	}
	return rs, nil
}

// encryptionKeys is who a new ciphertext is encrypted to: the identity, the
// next identity during a rotation, and every recipient except the previous
// identity being rotated out.
func (v *Vault) encryptionKeys(rec *record, rs []Recipient) []string {
	keys := []string{rec.cur.Recipient().String()}
	if rec.next != nil {
		keys = append(keys, rec.next.Recipient().String())
	}
	drop := ""
	if rec.prev != nil {
		drop = rec.prev.Recipient().String()
	}
	for _, r := range rs {
		if r.Key != drop {
			keys = append(keys, r.Key)
		}
	}
	return dedupe(keys)
}

func dedupe(keys []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// encrypt seals value to keys in age's binary format, in memory.
func encrypt(value []byte, keys []string) ([]byte, error) {
	rs, err := recipientsOf(keys)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	w, err := age.Encrypt(&buf, rs...)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(value); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// dirSafe refuses a vault directory that is a symbolic link or not a
// directory: vault/data is writable from the agent container, and following a
// planted link would read or write outside the vault.
func (v *Vault) dirSafe(p string, create bool) error {
	fi, err := v.fs().Lstat(p)
	if errors.Is(err, fs.ErrNotExist) && create {
		if err := v.fs().MkdirAll(p, 0o700); err != nil {
			return errs.Wrap(errs.Failure, err, "create %s", v.rel(p))
		}
		return v.fs().Chmod(p, 0o700)
	}
	if err != nil {
		return errs.Wrap(errs.Failure, err, "inspect %s", v.rel(p))
	}
	if fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir() {
		return errs.Failf("%s is not a plain directory (a symbolic link?); refusing to use it", v.rel(p)).
			Advise(NotADirectory)
	}
	return nil
}

// readEntry reads an entry's ciphertext.
func (v *Vault) readEntry(name string) ([]byte, fs.FileInfo, error) {
	if err := v.dirSafe(v.In.VaultData(), false); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, &errs.Error{Code: errs.Failure, Msg: fmt.Sprintf("vault entry %q", name), Err: ErrNotFound,
				Advice: errs.NewAdvice(NoEntry)}
		}
		return nil, nil, err
	}
	p := v.In.VaultEntry(name)
	ct, fi, err := v.readSmall(p, maxEntryFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, &errs.Error{Code: errs.Failure, Msg: fmt.Sprintf("vault entry %q", name), Err: ErrNotFound,
			Advice: errs.NewAdvice(NoEntry)}
	}
	if err != nil {
		return nil, nil, errs.Failf("vault entry %q: %v", name, err)
	}
	return ct, fi, nil
}

// decrypt opens ciphertext ct of entry name with ids.
func decrypt(name, rel string, ct []byte, ids []age.Identity) ([]byte, error) {
	var src io.Reader = bytes.NewReader(ct)
	if t := bytes.TrimLeft(ct, " \t\r\n"); bytes.HasPrefix(t, []byte(armor.Header)) {
		src = armor.NewReader(bytes.NewReader(t)) // written by hand with age -a
	}
	r, err := age.Decrypt(src, ids...)
	var nomatch *age.NoIdentityMatchError
	if errors.As(err, &nomatch) {
		return nil, errs.Failf("vault entry %q (%s) is not encrypted to this vault's identity", name, rel).
			Advise(OtherKeys)
	}
	// age's own messages may quote bytes of the file, which could be a
	// plaintext pasted by hand: describe the failure without them.
	if err != nil {
		return nil, errs.Failf("vault entry %q (%s) is corrupt: not an age file, or its header is damaged", name, rel).
			Advise(CorruptEntry)
	}
	val, err := io.ReadAll(io.LimitReader(r, MaxValueSize+1))
	if err != nil {
		return nil, errs.Failf("vault entry %q (%s) is corrupt: the encrypted data is damaged or truncated", name, rel).
			Advise(CorruptEntry)
	}
	if len(val) > MaxValueSize {
		return nil, errs.Failf("vault entry %q (%s) holds more than %d bytes", name, rel, MaxValueSize)
	}
	return val, nil
}

// writeEntry atomically replaces an entry's ciphertext. A non-zero mtime is
// kept (re-encryption does not change when the value was set).
func (v *Vault) writeEntry(name string, ct []byte, mtime time.Time) error {
	p := v.In.VaultEntry(name)
	if err := v.fs().Write(p, ct, 0o600); err != nil {
		return errs.Wrap(errs.Failure, err, "vault entry %q", name)
	}
	if !mtime.IsZero() {
		v.setMtime(p, mtime)
	}
	return nil
}

// setMtime sets p's modification (and access) time, relative to its
// directory opened through the layer and without following a link: best
// effort.
func (v *Vault) setMtime(p string, t time.Time) {
	d, err := v.fs().OpenDir(filepath.Dir(p))
	if err != nil {
		return
	}
	defer d.Close()
	ts := unix.NsecToTimespec(t.UnixNano())
	_ = unix.UtimesNanoAt(int(d.Fd()), filepath.Base(p), []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW)
}

// link gives the entry at src the second name dst, both beneath the
// instance: their directories are opened through the layer (no link
// followed on the way), linkat(2) never replaces dst (fs.ErrExist) and links
// a link itself, never its target. Both base names are single components
// the caller built (checked entry names, stamps).
func (v *Vault) link(src, dst string) error {
	sd, err := v.fs().OpenDir(filepath.Dir(src))
	if err != nil {
		return err
	}
	defer sd.Close()
	dd, err := v.fs().OpenDir(filepath.Dir(dst))
	if err != nil {
		return err
	}
	defer dd.Close()
	if err := unix.Linkat(int(sd.Fd()), filepath.Base(src), int(dd.Fd()), filepath.Base(dst), 0); err != nil {
		return &os.LinkError{Op: "link", Old: src, New: dst, Err: err}
	}
	_ = dd.Sync()
	return nil
}

// sameFile reports whether two infos from the layer describe one file.
func sameFile(a, b fs.FileInfo) bool {
	sa, ok1 := a.Sys().(*unix.Stat_t)
	sb, ok2 := b.Sys().(*unix.Stat_t)
	return ok1 && ok2 && sa.Dev == sb.Dev && sa.Ino == sb.Ino
}

// reencrypt rewrites one entry for keys, decrypting with ids.
func (v *Vault) reencrypt(name string, ids []age.Identity, keys []string) error {
	ct, fi, err := v.readEntry(name)
	if err != nil {
		return err
	}
	val, err := decrypt(name, v.rel(v.In.VaultEntry(name)), ct, ids)
	if err != nil {
		return err
	}
	defer clear(val)
	nct, err := encrypt(val, keys)
	if err != nil {
		return errs.Wrap(errs.Failure, err, "encrypt vault entry %q", name)
	}
	return v.writeEntry(name, nct, fi.ModTime())
}

// InitOptions configures Init.
type InitOptions struct {
	Passphrase bool // protect the identity with a passphrase (asked with v.Passphrase)
	Force      bool // create an identity even though entries encrypted to another one exist
}

// InitResult says what Init did.
type InitResult struct {
	PublicKey string   `json:"public_key,omitempty"`
	Protected bool     `json:"protected"`
	Created   []string `json:"created"`
	Existing  bool     `json:"existing"` // an identity was already there; nothing changed
}

// Init creates the vault's identity and recipients.txt. It never replaces an
// existing identity: run again, it changes nothing.
func (v *Vault) Init(opt InitOptions) (res *InitResult, err error) {
	defer func() {
		if res == nil || !res.Existing {
			v.log("vault.init", v.rel(v.In.VaultIdentity()), err, map[string]any{"protected": opt.Passphrase})
		}
	}()
	if InContainer() {
		return nil, errs.Failf("vault init runs on the host: vault keys never enter the agent container").
			Advise(InitInContainer)
	}
	for _, d := range []string{v.In.Vault(), v.In.VaultKeys(), v.In.VaultData()} {
		if err := v.dirSafe(d, true); err != nil {
			return nil, err
		}
	}
	if err := v.fs().Chmod(v.In.VaultKeys(), 0o700); err != nil {
		return nil, errs.Wrap(errs.Failure, err, "chmod %s", v.rel(v.In.VaultKeys()))
	}
	unlock, err := v.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	res = &InitResult{Created: []string{}}
	if data, _, err := v.readSmall(v.In.VaultIdentity(), maxKeyFile); err == nil {
		res.Existing, res.Protected = true, isProtected(data)
		if !res.Protected {
			if id, err := parseIdentity(data); err == nil {
				res.PublicKey = id.Recipient().String()
			}
		}
		if opt.Passphrase && !res.Protected {
			return res, errs.Failf("%s already exists without a passphrase; init never changes an existing identity",
				v.rel(v.In.VaultIdentity())).Advise(UnprotectedExists)
		}
		return res, nil
	} else if ok, xerr := v.exists(v.In.VaultIdentity()); xerr != nil {
		return nil, xerr
	} else if ok {
		return nil, errs.Wrap(errs.Failure, err, "read %s", v.rel(v.In.VaultIdentity()))
	}
	if ok, err := v.exists(v.In.VaultRecipients()); err != nil {
		return nil, err
	} else if ok {
		return nil, errs.Failf("%s exists but %s does not", v.rel(v.In.VaultRecipients()), v.rel(v.In.VaultIdentity())).
			Advise(RecipientsOnly)
	}
	if names, _, _ := v.list(); len(names) > 0 && !opt.Force {
		return nil, errs.Failf("vault/data holds %s but there is no identity to read them", style.N(len(names), "entry", "entries")).
			Advise(EntriesWithoutKey)
	}
	id, err := age.GenerateX25519Identity()
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "generate identity")
	}
	plain := formatIdentity(id, v.now())
	defer clear(plain)
	data := plain
	if opt.Passphrase {
		pass, err := v.Passphrase("New passphrase for the vault identity", true)
		if err != nil {
			return nil, err
		}
		if data, err = protect(plain, pass); err != nil {
			return nil, errs.Wrap(errs.Failure, err, "protect identity")
		}
		v.pass = pass
		res.Protected = true
	}
	if err := v.fs().Create(v.In.VaultIdentity(), data, 0o600); err != nil {
		return nil, errs.Wrap(errs.Failure, err, "create %s", v.rel(v.In.VaultIdentity()))
	}
	res.Created = append(res.Created, v.rel(v.In.VaultIdentity()))
	rs := FormatRecipients([]Recipient{{Key: id.Recipient().String(), Label: SelfLabel}})
	if err := v.fs().Create(v.In.VaultRecipients(), rs, 0o600); err != nil {
		return nil, errs.Wrap(errs.Failure, err, "create %s", v.rel(v.In.VaultRecipients()))
	}
	res.Created = append(res.Created, v.rel(v.In.VaultRecipients()))
	res.PublicKey = id.Recipient().String()
	return res, nil
}

// Set stores value under name, replacing any previous value. It reports
// whether the entry is new.
func (v *Vault) Set(name string, value []byte) (created bool, err error) {
	if err := CheckName(name); err != nil {
		return false, err
	}
	defer func() { v.log("vault.set", name, err, map[string]any{"created": created}) }()
	if len(value) == 0 {
		return false, errs.Usagef("empty value for vault entry %q; nothing stored", name).
			Advise(EmptyValue)
	}
	if len(value) > MaxValueSize {
		return false, errs.Usagef("value for vault entry %q is larger than %d bytes", name, MaxValueSize)
	}
	what := fmt.Sprintf("vault entry %q", name)
	if ok, err := v.exists(v.In.VaultIdentity()); err != nil || !ok {
		return false, v.missingKeyOr(what, err)
	}
	if err := v.dirSafe(v.In.VaultData(), true); err != nil {
		return false, err
	}
	unlock, err := v.lock()
	if err != nil {
		return false, err
	}
	defer unlock()
	rec, err := v.loadRecord(what)
	if err != nil {
		return false, err
	}
	rs, err := v.readRecipients(what)
	if err != nil {
		return false, err
	}
	ct, err := encrypt(value, v.encryptionKeys(rec, rs))
	if err != nil {
		return false, errs.Wrap(errs.Failure, err, "encrypt %s", what)
	}
	had, err := v.exists(v.In.VaultEntry(name))
	if err != nil {
		return false, err
	}
	created = !had
	return created, v.writeEntry(name, ct, time.Time{})
}

// Get decrypts the value of name.
func (v *Vault) Get(name string) (val []byte, err error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	defer func() { v.log("vault.get", name, err, nil) }()
	return v.get(name, fmt.Sprintf("vault entry %q", name))
}

func (v *Vault) get(name, what string) ([]byte, error) {
	if InContainer() {
		return nil, v.missingKey(what) // no session mounts the vault
	}
	// A missing or unreadable entry fails before the lock is taken.
	if _, _, err := v.readEntry(name); err != nil {
		return nil, err
	}
	unlock, err := v.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	rec, err := v.loadRecord(what)
	if err != nil {
		return nil, err
	}
	// Read again under the lock: a rotation may have rewritten it meanwhile.
	ct, _, err := v.readEntry(name)
	if err != nil {
		return nil, err
	}
	return decrypt(name, v.rel(v.In.VaultEntry(name)), ct, rec.identities())
}

// Entry describes one stored entry, never its value.
type Entry struct {
	Name    string    `json:"name"`
	Size    int64     `json:"size"` // bytes of ciphertext
	Updated time.Time `json:"updated"`
}

// List returns the entries sorted by name, and the files in vault/data that
// are not entries (ignored; temp files of interrupted writes are not listed).
func (v *Vault) List() (entries []Entry, ignored []string, err error) {
	return v.list()
}

func (v *Vault) list() ([]Entry, []string, error) {
	dir := v.In.VaultData()
	if ok, err := v.exists(dir); err != nil {
		return nil, nil, err
	} else if !ok {
		return []Entry{}, nil, nil
	}
	if err := v.dirSafe(dir, false); err != nil {
		return nil, nil, err
	}
	ents, err := v.fs().ReadDir(dir)
	if err != nil {
		return nil, nil, errs.Wrap(errs.Failure, err, "read %s", v.rel(dir))
	}
	out := []Entry{}
	var ignored []string
	for _, d := range ents {
		fn := d.Name()
		if strings.HasPrefix(fn, ".tmp-") {
			continue
		}
		name, ok := strings.CutSuffix(fn, ".age")
		info, err := d.Info()
		if !ok || !ValidName(name) || err != nil || !info.Mode().IsRegular() {
			ignored = append(ignored, v.rel(filepath.Join(dir, fn)))
			continue
		}
		out = append(out, Entry{Name: name, Size: info.Size(), Updated: info.ModTime().UTC().Truncate(time.Second)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, ignored, nil
}

func (v *Vault) names() ([]string, error) {
	es, _, err := v.list()
	if err != nil {
		return nil, err
	}
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Name
	}
	return out, nil
}

// Remove takes name out of the vault. Without purge the ciphertext moves to
// vault/removed/NAME.TIME.age (still encrypted); the path is returned. With
// purge the file is deleted.
func (v *Vault) Remove(name string, purge bool) (movedTo string, err error) {
	if err := CheckName(name); err != nil {
		return "", err
	}
	defer func() {
		v.log("vault.rm", name, err, map[string]any{"purge": purge, "moved_to": movedTo})
	}()
	if err := v.dirSafe(v.In.VaultData(), false); err != nil {
		return "", err
	}
	unlock, err := v.lock()
	if err != nil {
		return "", err
	}
	defer unlock()
	src := v.In.VaultEntry(name)
	fi, err := v.fs().Lstat(src)
	if errors.Is(err, fs.ErrNotExist) {
		return "", &errs.Error{Code: errs.Failure, Msg: fmt.Sprintf("vault entry %q", name), Err: ErrNotFound,
			Advice: errs.NewAdvice(NoEntry)}
	}
	if err != nil || fi.IsDir() {
		return "", errs.Failf("vault entry %q: %s is not a file", name, v.rel(src))
	}
	if purge {
		if err := v.fs().Remove(src); err != nil {
			return "", errs.Wrap(errs.Failure, err, "remove vault entry %q", name)
		}
		return "", nil
	}
	if err := v.dirSafe(v.In.VaultRemoved(), true); err != nil {
		return "", err
	}
	stamp := v.now().UTC().Format("20060102T150405Z")
	for i := 0; ; i++ {
		fn := name + "." + stamp + ".age"
		if i > 0 {
			fn = fmt.Sprintf("%s.%s-%d.age", name, stamp, i)
		}
		dst := filepath.Join(v.In.VaultRemoved(), fn)
		err := v.link(src, dst)
		if errors.Is(err, fs.ErrExist) && i < 100 {
			continue
		}
		if err != nil {
			return "", errs.Wrap(errs.Failure, err, "move vault entry %q to %s", name, v.rel(v.In.VaultRemoved()))
		}
		if err := v.fs().Remove(src); err != nil {
			return "", errs.Wrap(errs.Failure, err, "remove vault entry %q", name)
		}
		return v.rel(dst), nil
	}
}

// Rename gives entry old the name new. It refuses to replace an entry.
func (v *Vault) Rename(old, new string) (err error) {
	if err := CheckName(old); err != nil {
		return err
	}
	if err := CheckName(new); err != nil {
		return err
	}
	defer func() { v.log("vault.rename", old, err, map[string]any{"to": new}) }()
	if err := v.dirSafe(v.In.VaultData(), false); err != nil {
		return err
	}
	unlock, err := v.lock()
	if err != nil {
		return err
	}
	defer unlock()
	src, dst := v.In.VaultEntry(old), v.In.VaultEntry(new)
	fi, err := v.fs().Lstat(src)
	if errors.Is(err, fs.ErrNotExist) {
		return &errs.Error{Code: errs.Failure, Msg: fmt.Sprintf("vault entry %q", old), Err: ErrNotFound,
			Advice: errs.NewAdvice(NoEntry)}
	}
	if err != nil || !fi.Mode().IsRegular() {
		return errs.Failf("vault entry %q: %s is not a regular file", old, v.rel(src))
	}
	if old == new {
		return nil
	}
	if dfi, err := v.fs().Lstat(dst); err == nil && sameFile(fi, dfi) {
		// An earlier rename stopped between link and unlink: finish it.
		if err := v.fs().Remove(src); err != nil {
			return errs.Wrap(errs.Failure, err, "rename vault entry %q", old)
		}
		return nil
	}
	if err := v.link(src, dst); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return errs.Failf("vault entry %q already exists", new).
				Advise(EntryExists, "name", new)
		}
		return errs.Wrap(errs.Failure, err, "rename vault entry %q", old)
	}
	if err := v.fs().Remove(src); err != nil {
		return errs.Wrap(errs.Failure, err, "rename vault entry %q", old)
	}
	return nil
}

// Recipients returns the public keys entries are encrypted to.
func (v *Vault) Recipients() ([]Recipient, error) {
	return v.readRecipients("vault recipients")
}

// Pending reports an interrupted rotation ("" when none). A rotation file
// that cannot be inspected counts as pending: what reads it next reports why.
func (v *Vault) Pending() string {
	if ok, err := v.exists(v.In.VaultIdentityNext()); ok || err != nil {
		return "re-encrypting to the new identity"
	}
	if ok, err := v.exists(v.In.VaultIdentityPrev()); ok || err != nil {
		return "dropping the old identity"
	}
	return ""
}

// Listed is an entry as hobbs vault list shows it: with the variables
// config.yaml gives it to.
type Listed struct {
	Entry
	UsedBy []config.Use `json:"used_by"`
}

// WithUses pairs entries with their uses in cfg; none when cfg is nil
// (config.yaml does not load, or is not there: inside the container).
func WithUses(es []Entry, cfg *config.Config) []Listed {
	out := make([]Listed, 0, len(es))
	for _, e := range es {
		l := Listed{Entry: e, UsedBy: []config.Use{}}
		if cfg != nil {
			l.UsedBy = cfg.Uses(e.Name)
		}
		out = append(out, l)
	}
	return out
}

// ListColumns is the header of hobbs vault list, the columns of Row.
const ListColumns = "NAME\tSIZE\tUPDATED\tUSED BY"

// Row is the entry's line of hobbs vault list, tab-separated: name, size
// of the encrypted file, when the value was last set (RFC 3339), and the
// variables using it ("; " between them, "-" for none). Never the value.
func (l Listed) Row() string {
	uses := make([]string, len(l.UsedBy))
	for i, u := range l.UsedBy {
		uses[i] = u.String()
	}
	used := strings.Join(uses, "; ")
	if used == "" {
		used = "-"
	}
	return fmt.Sprintf("%s\t%d\t%s\t%s", l.Name, l.Size, l.Updated.Format(time.RFC3339), used)
}
