// Package userscope reads and writes the Claude Code user scope of an
// interactive session's state volume as tar streams, the form in which the
// engine's `cp` hands a container's files out (`docker cp CONTAINER:DIR -`)
// and takes them in (`docker cp - CONTAINER:DIR`). The host cannot read the
// state volume itself, and the container that wrote it is hostile: Read
// never extracts anything to disk and never follows a link; it lists the
// stream's entries by their names, keeps the content of the files the
// caller asks for (listing the rest by size, conversation transcripts with
// the hash of their content as it passed), and reports every entry that is not a
// regular file, directory or symbolic link, every name that is not a plain relative path
// and every entry over the caps, as Odd: a change the caller holds rather
// than trusts. Diff compares two listings; Write builds the tar that puts
// files back.
package userscope

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// Kind is what an entry of a listing is.
type Kind int

const (
	// File is a regular file.
	File Kind = iota
	// Dir is a directory.
	Dir
	// Link is a symbolic link: its target is kept as text, never
	// followed (it names a path inside the container).
	Link
	// Odd is anything else (a hard link, a FIFO, a device, a file over
	// the caps, a name given twice): reported, never read, never written.
	Odd
)

// Entry is one path of a listing.
type Entry struct {
	// Path is slash-separated, relative to the listed directory.
	Path string
	Kind Kind
	Size int64
	// Hash is the SHA-256 of a kept File's content (hex), and of a
	// transcript's (IsTranscript), hashed as it passed, not kept; "" for
	// another file listed by its size only.
	Hash string
	// Data is a kept File's content.
	Data []byte
	// Exec says a File is runnable by its owner (a skill's script): Write
	// writes it 0700, else 0600 — never setuid, setgid or sticky.
	Exec bool `json:",omitempty"`
	// Target is a Link's target.
	Target string
	// Why says what makes an Odd entry odd, or what a Link is.
	Why string
}

// Limits cap what Read takes from a stream.
type Limits struct {
	// Entries caps the entries read; past it Read stops with ErrTooMany.
	Entries int
	// File caps the size of one file to keep; a larger one is Odd (not
	// read).
	File int64
	// Total caps the bytes of the files kept in all; past it Read stops
	// with ErrTooBig.
	Total int64
	// Names caps the bytes of the entries' names and link targets in all
	// (each may be up to a MiB long in a tar stream); past it Read stops
	// with ErrTooMany.
	Names int64
	// Deadline, when set, is when List gives up (ErrTooSlow): a volume
	// it cannot list in time is read the engine's way.
	Deadline time.Time
}

// DefaultLimits suit a user scope: instructions, settings, skills and
// agents are small text files; the rest of the state directory
// (transcripts, caches, snapshots) is listed by size, not kept.
var DefaultLimits = Limits{Entries: 200000, File: 16 << 20, Total: 128 << 20, Names: 64 << 20}

var (
	// ErrTooMany: the stream has more entries than Limits.Entries.
	ErrTooMany = errors.New("userscope: too many entries (or names too long)")
	// ErrTooBig: the stream's files add up to more than Limits.Total.
	ErrTooBig = errors.New("userscope: more content than the cap")
	// ErrTooSlow: List passed Limits.Deadline.
	ErrTooSlow = errors.New("userscope: not listed in the time given")
)

// Encodable reports whether l comes back unchanged from its JSON form
// (a kept listing, the proxy's): every path and link target valid UTF-8
// (encoding/json writes anything else as U+FFFD, and two names would
// then be one), and no name it could not place.
func (l *Listing) Encodable() error {
	if len(l.Problems) > 0 {
		return fmt.Errorf("userscope: names that could not be placed: %s", l.Problems[0])
	}
	for p, e := range l.Entries {
		if !utf8.ValidString(p) || !utf8.ValidString(e.Target) {
			return fmt.Errorf("userscope: %q: a name or link target that is not UTF-8", p)
		}
	}
	return nil
}

// Listing is what Read found.
type Listing struct {
	Entries map[string]*Entry
	// Problems are names Read could not place (absolute, escaping the
	// top, not under strip), in the stream's order.
	Problems []string
}

// Paths lists the listing's paths, sorted.
func (l *Listing) Paths() []string {
	ps := make([]string, 0, len(l.Entries))
	for p := range l.Entries {
		ps = append(ps, p)
	}
	sort.Strings(ps)
	return ps
}

// Clean makes name (an entry's name in a tar stream) a path relative to
// the stream's top with the leading strip element removed ("" keeps it).
// It refuses absolute names, names with a ".." element or a NUL, and
// names outside strip. A backslash is an ordinary character of a name (a
// skill's directory may have one): refused, its entry would be no change.
func Clean(name, strip string) (string, error) {
	switch {
	case name == "":
		return "", errors.New("an empty name")
	case strings.ContainsRune(name, 0):
		return "", fmt.Errorf("%q: a name with a NUL", name)
	case strings.HasPrefix(name, "/"):
		return "", fmt.Errorf("%q: an absolute name", name)
	}
	for _, el := range strings.Split(strings.TrimSuffix(name, "/"), "/") {
		if el == ".." {
			return "", fmt.Errorf("%q: a name that climbs out (..)", name)
		}
	}
	p := path.Clean(name)
	if strip != "" {
		switch {
		case p == strip:
			return ".", nil
		case strings.HasPrefix(p, strip+"/"):
			p = p[len(strip)+1:]
		default:
			return "", fmt.Errorf("%q: not under %s", name, strip)
		}
	}
	return p, nil
}

// Read lists the tar stream r. Entry names are cleaned with Clean(name,
// strip); the top itself (".") is not listed. keep says which files to
// keep (Data, Hash; nil: none): the others are listed by their size. Read
// reads r to its end or to the first cap it passes.
func Read(r io.Reader, strip string, lim Limits, keep func(path string) bool) (*Listing, error) {
	return read(tar.NewReader(r), strip, lim, keep)
}

// source is what read lists: a tar stream's reader, or a directory's
// (dirSource). Read gives the current entry's content.
type source interface {
	Next() (*tar.Header, error)
	Read(p []byte) (int, error)
}

func read(tr source, strip string, lim Limits, keep func(path string) bool) (*Listing, error) {
	l := &Listing{Entries: map[string]*Entry{}}
	var n int
	var total, names int64
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return l, nil
		}
		if err == ErrTooMany || err == ErrTooSlow { // a dirSource's caps
			return l, err
		}
		if err != nil {
			return l, fmt.Errorf("userscope: reading the stream: %w", err)
		}
		n++
		names += int64(len(h.Name) + len(h.Linkname))
		if n > lim.Entries || names > lim.Names {
			return l, ErrTooMany
		}
		p, err := Clean(h.Name, strip)
		if err != nil {
			l.Problems = append(l.Problems, err.Error())
			continue
		}
		if p == "." {
			continue
		}
		if prev := l.Entries[p]; prev != nil {
			prev.Kind, prev.Data, prev.Target, prev.Why = Odd, nil, "", "given twice in the stream"
			continue
		}
		e := &Entry{Path: p, Size: h.Size}
		l.Entries[p] = e
		switch h.Typeflag {
		case tar.TypeDir:
			e.Kind, e.Size = Dir, 0
		case tar.TypeReg, tar.TypeRegA:
			e.Kind, e.Exec = File, h.Mode&0o100 != 0
			if keep == nil || !keep(p) {
				// Listed by its size only (its bytes are skipped), a
				// transcript with the SHA-256 of its bytes as they pass,
				// so that a rewrite of the same size is a change (Diff).
				if IsTranscript(p) {
					sum := sha256.New()
					if _, err := io.Copy(sum, tr); err != nil {
						return l, fmt.Errorf("userscope: reading %s: %w", p, err)
					}
					e.Hash = hex.EncodeToString(sum.Sum(nil))
				}
				continue
			}
			if h.Size < 0 || h.Size > lim.File {
				e.Kind, e.Why = Odd, fmt.Sprintf("a file of %d bytes, over the cap of %d", h.Size, lim.File)
				continue
			}
			total += h.Size
			if total > lim.Total {
				return l, ErrTooBig
			}
			var buf bytes.Buffer
			got, err := io.Copy(&buf, io.LimitReader(tr, h.Size))
			if err != nil {
				return l, fmt.Errorf("userscope: reading %s: %w", p, err)
			}
			if got != h.Size {
				return l, fmt.Errorf("userscope: %s: %d of %d bytes", p, got, h.Size)
			}
			sum := sha256.Sum256(buf.Bytes())
			e.Hash, e.Data = hex.EncodeToString(sum[:]), buf.Bytes()
		case tar.TypeSymlink:
			e.Kind, e.Size, e.Target, e.Why = Link, 0, h.Linkname, "a symbolic link (to "+quote(h.Linkname)+")"
		case tar.TypeLink:
			e.Kind, e.Size, e.Why = Odd, 0, "a hard link (to "+quote(h.Linkname)+")"
		case tar.TypeFifo:
			e.Kind, e.Size, e.Why = Odd, 0, "a FIFO"
		case tar.TypeChar, tar.TypeBlock:
			e.Kind, e.Size, e.Why = Odd, 0, "a device"
		default:
			e.Kind, e.Size, e.Why = Odd, 0, fmt.Sprintf("an entry of type %q", h.Typeflag)
		}
	}
}

// quote shows a link target without letting it run on (it is the
// container's text).
func quote(s string) string {
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return fmt.Sprintf("%q", s)
}

// Change is one path that differs between two listings: Before or After
// is nil where the path was absent.
type Change struct {
	Path          string
	Before, After *Entry
}

// Diff lists the paths under which (nil: every path) that differ between
// before and after, sorted: created, removed, changed in content (a file
// listed by size: in size) or kind.
// An Odd entry on either side is always a change (it cannot be compared).
func Diff(before, after *Listing, under func(path string) bool) []Change {
	seen := map[string]bool{}
	var out []Change
	add := func(p string) {
		if seen[p] || under != nil && !under(p) {
			return
		}
		seen[p] = true
		b, a := before.Entries[p], after.Entries[p]
		if same(b, a) {
			return
		}
		out = append(out, Change{Path: p, Before: b, After: a})
	}
	for _, p := range before.Paths() {
		add(p)
	}
	for _, p := range after.Paths() {
		add(p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func same(b, a *Entry) bool {
	switch {
	case b == nil || a == nil:
		return b == a
	case b.Kind == Odd || a.Kind == Odd:
		return false
	case b.Kind != a.Kind:
		return false
	case b.Kind == Dir:
		return true
	case b.Kind == Link:
		return b.Target == a.Target
	case b.Exec != a.Exec && b.Data != nil && a.Data != nil:
		// A kept file made runnable, or no longer: what runs changed.
		return false
	case b.Size == a.Size && b.Hash == a.Hash:
		return true
	case b.Size == a.Size && b.Data == nil && a.Data == nil && (b.Hash == "" || a.Hash == ""):
		// A transcript one side listed by size alone (a listing kept
		// by a build that did not hash them): its size is all there is.
		return true
	case b.Path == ClaudeState && b.Data != nil && a.Data != nil:
		// Claude Code rewrites its state file as it runs: it changed
		// only where what it loads from it changed.
		bl, ok1 := loadedState(b.Data)
		al, ok2 := loadedState(a.Data)
		return ok1 && ok2 && bytes.Equal(bl, al)
	}
	return false
}

// ClaudeState is Claude Code's state file in the user scope: it holds the
// user's MCP servers, and the servers and tools of each project, among
// the counters and caches Claude Code rewrites at every start.
const ClaudeState = ".claude.json"

// loadedKeys are the keys of ClaudeState, at its top and in each of its
// projects, that change what a later session loads or may do.
var loadedKeys = []string{"mcpServers", "enabledMcpjsonServers", "disabledMcpjsonServers",
	"enableAllProjectMcpServers", "allowedTools"}

// loadedState is the part of a ClaudeState file a later session acts on
// (loadedKeys, top level and per project), in one canonical JSON form;
// false when the file is not a JSON object.
func loadedState(data []byte) ([]byte, bool) {
	var top map[string]any
	if err := json.Unmarshal(data, &top); err != nil || top == nil {
		return nil, false
	}
	pick := func(m map[string]any) map[string]any {
		out := map[string]any{}
		for _, k := range loadedKeys {
			if v, ok := m[k]; ok {
				out[k] = v
			}
		}
		return out
	}
	loaded := pick(top)
	if projects, ok := top["projects"].(map[string]any); ok {
		ps := map[string]any{}
		for name, p := range projects {
			if pm, ok := p.(map[string]any); ok {
				if picked := pick(pm); len(picked) > 0 {
					ps[name] = picked
				}
			} else {
				ps[name] = p
			}
		}
		loaded["projects"] = ps
	} else if v, ok := top["projects"]; ok {
		loaded["projects"] = v
	}
	out, err := json.Marshal(loaded) // map keys sorted: canonical
	return out, err == nil
}

// Write writes to w a tar stream of the files (Kind File, with Data; 0700
// when Exec, else 0600) and directories in es, under top ("" for none),
// each directory before what it holds; the stream the engine's `cp -` takes to put them back. It
// refuses an entry whose path Clean would not give back unchanged.
func Write(w io.Writer, top string, es []*Entry) error {
	tw := tar.NewWriter(w)
	if err := writeEntries(tw, top, es); err != nil {
		return err
	}
	return tw.Close()
}

// PutBack writes to w the one stream a put-back reads (its command line
// would cap how many paths it can name): each list of paths as a member
// of its own, every path "./"-prefixed and ended by a NUL, then es under
// PutBackFiles (Write's form). From remove (relative paths; isLink says
// which are symbolic links) it lists:
//
//   - PutBackRemove: the paths to remove, but those under another;
//   - PutBackDirs: every directory on the way to them, each before what it
//     holds, to be given back its owner's permissions (the agent may have
//     made one read-only, or unreadable);
//   - PutBackTrees: the paths to remove but links, to be given back their
//     owner's permissions with all they hold, so that they can be removed.
func PutBack(w io.Writer, remove []string, isLink func(string) bool, es []*Entry) error {
	sorted := append([]string(nil), remove...)
	sort.Strings(sorted)
	var tops, trees []string
	dirs := map[string]bool{}
	for _, p := range sorted {
		if strings.ContainsRune(p, 0) || p == "" {
			return fmt.Errorf("userscope: %q: not a path to remove", p)
		}
		if len(tops) > 0 && strings.HasPrefix(p, tops[len(tops)-1]+"/") {
			continue // removed with the one above it
		}
		tops = append(tops, p)
		if !isLink(p) {
			trees = append(trees, p)
		}
		for d := path.Dir(p); d != "." && d != "/"; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	dl := make([]string, 0, len(dirs))
	for d := range dirs {
		dl = append(dl, d)
	}
	sort.Strings(dl) // a directory sorts before what it holds
	tw := tar.NewWriter(w)
	for _, m := range []struct {
		name  string
		paths []string
	}{{PutBackRemove, tops}, {PutBackDirs, dl}, {PutBackTrees, trees}} {
		var list bytes.Buffer
		for _, p := range m.paths {
			list.WriteString("./" + p)
			list.WriteByte(0)
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: m.name, Mode: 0o600, Size: int64(list.Len())}); err != nil {
			return err
		}
		if _, err := tw.Write(list.Bytes()); err != nil {
			return err
		}
	}
	if err := writeEntries(tw, PutBackFiles, es); err != nil {
		return err
	}
	return tw.Close()
}

// The members of PutBack's stream.
const (
	PutBackRemove = "remove"
	PutBackDirs   = "dirs"
	PutBackTrees  = "trees"
	PutBackFiles  = "files"
)

func writeEntries(tw *tar.Writer, top string, es []*Entry) error {
	sorted := append([]*Entry(nil), es...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	dirs := map[string]bool{}
	mkdir := func(p string) error {
		if p == "." || dirs[p] {
			return nil
		}
		dirs[p] = true
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: path.Join(top, p) + "/", Mode: 0o700})
	}
	if top != "" {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: top + "/", Mode: 0o700}); err != nil {
			return err
		}
	}
	for _, e := range sorted {
		if c, err := Clean(e.Path, ""); err != nil || c != e.Path || c == "." {
			return fmt.Errorf("userscope: %q: not a plain relative path", e.Path)
		}
		// Each parent first.
		els := strings.Split(e.Path, "/")
		for i := 1; i < len(els); i++ {
			if err := mkdir(strings.Join(els[:i], "/")); err != nil {
				return err
			}
		}
		switch e.Kind {
		case Dir:
			if err := mkdir(e.Path); err != nil {
				return err
			}
		case File:
			if e.Data == nil && e.Size != 0 {
				return fmt.Errorf("userscope: %s: no content kept to write", e.Path)
			}
			mode := int64(0o600)
			if e.Exec {
				mode = 0o700
			}
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: path.Join(top, e.Path), Mode: mode, Size: int64(len(e.Data))}); err != nil {
				return err
			}
			if _, err := tw.Write(e.Data); err != nil {
				return err
			}
		case Link:
			if e.Target == "" || strings.ContainsRune(e.Target, 0) {
				return fmt.Errorf("userscope: %s: a link with no target", e.Path)
			}
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: path.Join(top, e.Path), Linkname: e.Target, Mode: 0o777}); err != nil {
				return err
			}
		default:
			return fmt.Errorf("userscope: %s: %s is never written", e.Path, e.Why)
		}
	}
	return nil
}

// Scope are the paths of the user scope (relative to CLAUDE_CONFIG_DIR)
// whose content Claude Code loads as instructions, settings or tools at a
// session's start (.claude.json holds the user's MCP servers; plugins/
// the installed plugins): see docs/identity.md for the documentation each
// rests on.
var Scope = []string{"CLAUDE.md", "settings.json", ClaudeState, "skills", "agents", "commands", "rules", "output-styles", "plugins"}

// InScope reports whether p (relative to CLAUDE_CONFIG_DIR) is in Scope or
// under one of its directories.
func InScope(p string) bool {
	for _, s := range Scope {
		if p == s || strings.HasPrefix(p, s+"/") {
			return true
		}
	}
	return false
}

// IsTranscript reports whether p (relative to CLAUDE_CONFIG_DIR) is a
// conversation transcript: a .jsonl file under projects/.
func IsTranscript(p string) bool {
	return strings.HasPrefix(p, "projects/") && strings.HasSuffix(p, ".jsonl")
}
