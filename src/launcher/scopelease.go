package launcher

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/adrg/xdg"
	"github.com/hobbs-agent/hobbs/src/userscope"
)

// The state volume's lease, and the listing kept between sessions.
//
// The baseline a session's end compares the Claude Code user scope against
// is what the volume held at its start. Reading it through the engine costs
// a `cp` on the start's critical path; instead, the listing the last
// session's end read is kept on the host and taken as the next start's
// baseline — but only when it is certainly what the volume holds: no other
// launcher may have written the volume since it was read.
//
// Every launcher whose agent mounts a state volume writable holds a shared
// flock on the volume's lease file from before its agent starts to after
// its end. A launcher is alone when it can take the lock exclusively. The
// rules, which keep "a kept listing is what the volume holds, and nobody
// writes the volume" true:
//
//   - a start that is alone takes the kept listing (reads and removes it);
//     one that is not removes it;
//   - an end that is alone holds the lock exclusively from before its
//     reading of the volume until it has kept what it read (no other
//     launcher can start meanwhile); one that is not, or one that wrote the
//     volume after reading it (a tainted session's changes put back),
//     removes the kept listing.
//
// Checking whether one is alone lets go of the shared lock for a moment
// (flock's conversions are not atomic); the checks take a second lock, the
// mutex, so no other check can run in that moment.
//
// Both files are in the host's state directory, beside the session notes
// (records.go): the agent, which can write the instance, cannot forge the
// listing a later session trusts. A launcher that dies lets go of its
// lock; what its agent may still write is caught by the note it leaves,
// which makes the next start read the volume (beginScope).

// scopeLease is a launcher's hold on a state volume's lease.
type scopeLease struct {
	lock    *os.File // the lease: shared, or exclusive when alone
	mutex   string   // taken while a launcher checks whether it is alone
	listing string   // the kept listing
}

// leaseWait bounds how long a launcher waits for the lease (another
// launcher's end holds it while it reads the volume and merges).
const leaseWait = 2 * time.Minute

// scopeLeaseDir is where leases and kept listings are.
func scopeLeaseDir() string { return filepath.Join(xdg.StateHome, "hobbs", "scope") }

// scopeKey names volume on the engine that bin and the environment select.
func scopeKey(bin, volume string) string {
	h := sha256.New()
	for _, s := range []string{bin, os.Getenv("DOCKER_HOST"), os.Getenv("DOCKER_CONTEXT"), os.Getenv("CONTAINER_HOST"), volume} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:24]
}

// openLease takes the lease of the volume key names, shared.
func openLease(key string) (*scopeLease, error) {
	dir := scopeLeaseDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, key+".lock"), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	l := &scopeLease{lock: f, mutex: filepath.Join(dir, key+".mutex"), listing: filepath.Join(dir, key+".json")}
	if err := flockWait(f, syscall.LOCK_SH); err != nil {
		f.Close()
		return nil, err
	}
	return l, nil
}

// flockWait takes how on f, waiting for leaseWait at most.
func flockWait(f *os.File, how int) error {
	deadline := time.Now().Add(leaseWait)
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case !errors.Is(err, syscall.EWOULDBLOCK):
			return err
		case time.Now().After(deadline):
			return errors.New("another launcher holds the state volume's lease (" + f.Name() + ")")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// alone reports whether no other launcher holds the lease; if so, it is
// held exclusively, else shared, as before.
func (l *scopeLease) alone() (bool, error) {
	m, err := os.OpenFile(l.mutex, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return false, err
	}
	defer m.Close() // lets go of the mutex
	if err := flockWait(m, syscall.LOCK_EX); err != nil {
		return false, err
	}
	for {
		err := syscall.Flock(int(l.lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EINTR):
			continue
		}
		// Only a launcher holding the mutex takes the lease exclusively:
		// taking it shared again waits for no one.
		return false, flockWait(l.lock, syscall.LOCK_SH)
	}
}

// share holds the lease shared again after alone found it alone.
func (l *scopeLease) share() error {
	m, err := os.OpenFile(l.mutex, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	defer m.Close()
	if err := flockWait(m, syscall.LOCK_EX); err != nil {
		return err
	}
	return flockWait(l.lock, syscall.LOCK_SH)
}

// keptListing is the kept listing's file. Format says which entries'
// facts it holds (keptFormat): one kept by another build is not taken.
type keptListing struct {
	Volume  string
	Format  int
	Listing *userscope.Listing
}

// keptFormat is the format of the listings this build keeps: 1 holds
// each kept file's execute bit (userscope.Entry.Exec).
const keptFormat = 1

// maxKept bounds the kept listing read back (the user scope's caps, as
// JSON).
const maxKept = 2 * (128 << 20)

// take reads and removes the kept listing of volume: nil when there is
// none or it is not one.
func (l *scopeLease) take(volume string) *userscope.Listing {
	f, err := os.OpenFile(l.listing, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	l.drop()
	var k keptListing
	if err := json.NewDecoder(io.LimitReader(f, maxKept)).Decode(&k); err != nil || k.Volume != volume || k.Format != keptFormat || k.Listing == nil {
		return nil
	}
	if k.Listing.Entries == nil {
		k.Listing.Entries = map[string]*userscope.Entry{}
	}
	return k.Listing
}

// keep keeps ls as volume's listing. It is a cache, renamed into place
// whole: a crash leaves the previous file or none, never a torn one that
// parses, and the next start then reads the volume.
func (l *scopeLease) keep(volume string, ls *userscope.Listing) error {
	if err := ls.Encodable(); err != nil {
		l.drop() // the next start reads the volume
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(l.listing), ".kept-*")
	if err != nil {
		return err
	}
	err = json.NewEncoder(f).Encode(keptListing{Volume: volume, Format: keptFormat, Listing: ls})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), l.listing)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		l.drop()
	}
	return err
}

// drop removes the kept listing.
func (l *scopeLease) drop() { _ = os.Remove(l.listing) }

// release lets go of the lease.
func (l *scopeLease) release() {
	if l != nil && l.lock != nil {
		_ = l.lock.Close()
		l.lock = nil
	}
}
