//go:build unix

package safefile

import (
	"io/fs"
	"sort"
	"time"

	"golang.org/x/sys/unix"
)

// fileInfo is an fs.FileInfo made from a stat result. Sys returns the
// *unix.Stat_t.
type fileInfo struct {
	name string
	st   unix.Stat_t
}

func statInfo(name string, st *unix.Stat_t) fs.FileInfo { return &fileInfo{name: name, st: *st} }

func (fi *fileInfo) Name() string       { return fi.name }
func (fi *fileInfo) Size() int64        { return fi.st.Size }
func (fi *fileInfo) ModTime() time.Time { return time.Unix(fi.st.Mtim.Unix()) }
func (fi *fileInfo) IsDir() bool        { return fi.Mode().IsDir() }
func (fi *fileInfo) Sys() any           { return &fi.st }
func (fi *fileInfo) Mode() fs.FileMode  { return fileMode(uint32(fi.st.Mode)) }

// fileMode turns a stat mode into an fs.FileMode.
func fileMode(sm uint32) fs.FileMode {
	m := fs.FileMode(sm & 0o777)
	switch sm & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	}
	if sm&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if sm&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if sm&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// dirEntry is an fs.DirEntry whose Info was taken when the directory was
// read (fstatat on the open directory, no link followed).
type dirEntry struct{ info fs.FileInfo }

func (d dirEntry) Name() string               { return d.info.Name() }
func (d dirEntry) IsDir() bool                { return d.info.IsDir() }
func (d dirEntry) Type() fs.FileMode          { return d.info.Mode().Type() }
func (d dirEntry) Info() (fs.FileInfo, error) { return d.info, nil }
func (d dirEntry) String() string             { return fs.FormatDirEntry(d) }

func sortEntries(es []fs.DirEntry) {
	sort.Slice(es, func(i, j int) bool { return es[i].Name() < es[j].Name() })
}
