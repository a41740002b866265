package userscope

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"syscall"
	"time"
)

// List lists the directory dir as Read lists the engine's cp stream of it
// (`docker cp CONTAINER:DIR -`, its entries named under top, strip top):
// the same entries, kinds, sizes, hashes and kept content, by the same
// caps. It is how the proxy, which mounts the state volume read-only,
// lists it for the launcher at the session's end (ListTo), without an
// engine call. dir's content is the agent's: List opens every path
// through an os.Root (no path climbs out of dir, no link is followed),
// opens a file only to read the content Read keeps or hashes, never
// blocking (a FIFO is listed as one, not opened), and fails — so that
// the caller reads the volume the engine's way — where it cannot read
// what the engine would (a file the agent made unreadable). Sockets are
// left out, as the engine's cp leaves them out.
func List(dir, top string, lim Limits, keep func(path string) bool) (*Listing, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	src := &dirSource{root: root, top: top, lim: lim, stack: []string{"."}, links: map[[2]uint64]string{}, deadline: lim.Deadline}
	defer src.closeFile()
	return read(src, top, lim, keep)
}

// dirSource walks a directory depth first, each directory's entries in
// name order (as `tar --sort=name` would), as a source of tar headers.
type dirSource struct {
	root   *os.Root
	top    string // the name the stream gives dir
	lim    Limits
	stack  []string // paths still to list, the next on top
	queued int      // names taken from directories in all
	names  int64    // and the bytes of their paths
	// deadline: past it, Next and Read fail with ErrTooSlow.
	deadline time.Time
	links    map[[2]uint64]string
	cur      string   // the current entry's path when it is a regular file
	size     int64    // its size
	f        *os.File // opened on its first Read
	left     int64
}

// Next lists the next path: its header, a directory's entries queued.
func (d *dirSource) Next() (*tar.Header, error) {
	d.closeFile()
	if d.late() {
		return nil, ErrTooSlow
	}
	for len(d.stack) > 0 {
		p := d.stack[len(d.stack)-1]
		d.stack = d.stack[:len(d.stack)-1]
		fi, err := d.root.Lstat(p)
		if err != nil {
			return nil, err
		}
		h := &tar.Header{Name: path.Join(d.top, p), Mode: int64(fi.Mode().Perm()), ModTime: fi.ModTime()}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 && !fi.IsDir() {
			// An inode with more than one name: the engine's stream
			// gives it once and its other names as hard links.
			key := [2]uint64{uint64(st.Dev), uint64(st.Ino)}
			if first, ok := d.links[key]; ok {
				h.Typeflag, h.Linkname = tar.TypeLink, path.Join(d.top, first)
				return h, nil
			}
			d.links[key] = p
		}
		switch m := fi.Mode(); {
		case m.IsDir():
			h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
			if err := d.queue(p, fi); err != nil {
				return nil, err
			}
		case m.IsRegular():
			h.Typeflag, h.Size = tar.TypeReg, fi.Size()
			d.cur, d.size, d.left = p, h.Size, h.Size
		case m&fs.ModeSymlink != 0:
			if h.Linkname, err = d.root.Readlink(p); err != nil {
				return nil, err
			}
			h.Typeflag = tar.TypeSymlink
		case m&fs.ModeNamedPipe != 0:
			h.Typeflag = tar.TypeFifo
		case m&fs.ModeDevice != 0 && m&fs.ModeCharDevice != 0:
			h.Typeflag = tar.TypeChar
		case m&fs.ModeDevice != 0:
			h.Typeflag = tar.TypeBlock
		case m&fs.ModeSocket != 0:
			continue
		default:
			return nil, fmt.Errorf("userscope: %s: a file of mode %v", p, m)
		}
		return h, nil
	}
	return nil, io.EOF
}

func (d *dirSource) late() bool { return !d.deadline.IsZero() && time.Now().After(d.deadline) }

// queue puts the entries of directory p on the stack, the first name on
// top, and stops past the caps on entries and on the bytes of their paths
// (a directory of millions of names, or of names deep down long paths, is
// not held in memory to be refused later).
func (d *dirSource) queue(p string, was fs.FileInfo) error {
	// The directory Lstat saw, not a link or a FIFO put in its place.
	f, err := d.root.OpenFile(p, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !os.SameFile(fi, was) {
		return fmt.Errorf("userscope: %q changed while it was listed", p)
	}
	var names []string
	for {
		ents, err := f.ReadDir(1024)
		for _, e := range ents {
			names = append(names, e.Name())
			d.names += int64(len(p) + 1 + len(e.Name()))
		}
		d.queued += len(ents)
		if d.queued > d.lim.Entries || d.names > d.lim.Names {
			return ErrTooMany
		}
		if err == io.EOF || len(ents) == 0 {
			break
		}
		if err != nil {
			return err
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(names)))
	for _, n := range names {
		if p != "." {
			n = path.Join(p, n)
		}
		d.stack = append(d.stack, n)
	}
	return nil
}

// Read reads the current regular file's content: exactly the size its
// header gave, from a descriptor opened without following a link or
// waiting on a FIFO, and checked to be that same file kind.
func (d *dirSource) Read(b []byte) (int, error) {
	if d.cur == "" || d.left == 0 {
		return 0, io.EOF
	}
	if d.late() {
		return 0, ErrTooSlow
	}
	if d.f == nil {
		f, err := d.root.OpenFile(d.cur, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		if err != nil {
			return 0, err
		}
		fi, err := f.Stat()
		if err == nil && (!fi.Mode().IsRegular() || fi.Size() != d.size) {
			err = fmt.Errorf("userscope: %q changed while it was listed", d.cur)
		}
		if err != nil {
			f.Close()
			return 0, err
		}
		d.f = f
	}
	if int64(len(b)) > d.left {
		b = b[:d.left]
	}
	n, err := d.f.Read(b)
	d.left -= int64(n)
	if err == io.EOF && d.left > 0 {
		err = fmt.Errorf("userscope: %q: %w", d.cur, io.ErrUnexpectedEOF)
	}
	if err == io.EOF {
		err = nil
	}
	return n, err
}

func (d *dirSource) closeFile() {
	if d.f != nil {
		d.f.Close()
		d.f = nil
	}
	d.cur = ""
}

// Listed is the file ListTo writes: Session says whose end asked for it.
type Listed struct {
	Format  int
	Session string
	Listing *Listing
}

// ListedFormat is the format of the files ListTo writes.
const ListedFormat = 1

// MaxListed caps the size of a file ListTo writes that LoadListed reads:
// the content caps of DefaultLimits, in base64, with the listing around it.
const MaxListed = 256 << 20

// ListLimits are List's caps where the proxy lists the state volume
// (ListTo): what it keeps is encoded whole in its memory (512 MiB), so a
// scope over these is left to the engine's way (Read, DefaultLimits).
var ListLimits = Limits{Entries: DefaultLimits.Entries, File: DefaultLimits.File, Total: 32 << 20, Names: 16 << 20}

// ListTo lists dir (List, its entries under top, ListLimits until
// deadline, keeping the user scope's content: InScope) into file, for
// session. The file is written whole or not at all: written as file+
// ".tmp" and renamed, a listing that is not Encodable not written (the
// caller removes a .tmp a killed ListTo left).
func ListTo(dir, top, file, session string, deadline time.Time) error {
	lim := ListLimits
	lim.Deadline = deadline
	l, err := List(dir, top, lim, InScope)
	if err != nil {
		return err
	}
	if err := l.Encodable(); err != nil {
		return err
	}
	tmp := file + TmpSuffix
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	err = json.NewEncoder(f).Encode(Listed{Format: ListedFormat, Session: session, Listing: l})
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

// TmpSuffix ends the name of the file ListTo writes before it renames it.
const TmpSuffix = ".tmp"

// LoadListed reads a file ListTo wrote for session (r at most MaxListed
// bytes).
func LoadListed(r io.Reader, session string) (*Listing, error) {
	var ld Listed
	if err := json.NewDecoder(io.LimitReader(r, MaxListed)).Decode(&ld); err != nil {
		return nil, fmt.Errorf("userscope: the listing: %w", err)
	}
	switch {
	case ld.Format != ListedFormat:
		return nil, fmt.Errorf("userscope: a listing of format %d (this build reads %d)", ld.Format, ListedFormat)
	case ld.Session != session:
		return nil, fmt.Errorf("userscope: a listing for session %q, not %q", ld.Session, session)
	case ld.Listing == nil || ld.Listing.Entries == nil:
		return nil, errors.New("userscope: an empty listing file")
	}
	for p, e := range ld.Listing.Entries {
		if e == nil || e.Path != p {
			return nil, fmt.Errorf("userscope: the listing's entry %q is not its own", p)
		}
		if c, err := Clean(p, ""); err != nil || c != p || c == "." {
			return nil, fmt.Errorf("userscope: the listing's entry %q is not a plain relative path", p)
		}
	}
	return ld.Listing, nil
}
