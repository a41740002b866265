package playbook

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// Grants. A playbook lives in playbooks/, which the agent's sessions can
// write: its text — the run: block and the body a headless run carries out
// with its secrets — is the agent's to change. What a run may have and do
// is what the user approved on the host: a grant, one JSON file per
// playbook in the instance's grants/ directory, which no session mounts,
// holding the playbook's whole text as approved (its bytes and their hash)
// and the hash of every file of the instance skills and sub-agents the
// text names. A run whose playbook differs from its grant in one byte, or
// one of whose named skills or sub-agents changed, is refused until the
// user approves again (hobbs playbook approve, which shows the difference
// with --diff, or the prompt of a run on a terminal). Host commands that
// change an approved playbook (allow, stage, reviewed, update; hobbs
// schedule add) approve exactly the bytes they write, under the playbooks
// lock.

// Grant is an approved playbook.
type Grant struct {
	Playbook string `json:"playbook"`
	Hash     string `json:"hash"` // RunHash of the approved run: block
	Run      *Run   `json:"run"`
	// TextHash is the SHA-256 of the playbook file's bytes as approved,
	// Text those bytes (for the diff). A grant without them predates
	// approvals of the whole text and approves nothing.
	TextHash string    `json:"text_hash,omitempty"`
	Text     string    `json:"text,omitempty"`
	Assets   []Asset   `json:"assets,omitempty"`
	Approved time.Time `json:"approved"`

	// files are the bytes of Assets' files as this process read them to
	// approve them (Approve; nil for a grant loaded from its file).
	files []AssetFile
}

// Asset is an instance skill or sub-agent a playbook's text names, with
// the hash of each of its files as approved.
type Asset struct {
	Kind string `json:"kind"` // "skill" or "agent"
	Name string `json:"name"`
	// Files maps each file's path, relative to the instance, to the
	// SHA-256 of its bytes; an entry hobbs does not read (a link, a FIFO)
	// to why ("is a symbolic link").
	Files map[string]string `json:"files"`
}

// RunHash identifies a run: block's content (nil: no block).
func RunHash(r *Run) string {
	if r == nil {
		return "none"
	}
	b, _ := json.Marshal(r)
	return hashBytes(b)
}

func hashBytes(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func grantPath(in instance.Instance, name string) string {
	return filepath.Join(in.Grants(), name+".json")
}

// LoadGrant returns the grant of playbook name, or nil when there is none.
// A grant file that does not parse is an error (and is left as it is).
func LoadGrant(in instance.Instance, name string) (*Grant, error) {
	if !ValidName(name) {
		return nil, errs.Usagef("invalid playbook name %q", name)
	}
	data, err := in.FS().ReadFile(grantPath(in, name), instance.MaxGrantFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "grant of %s", name)
	}
	var g Grant
	if err := json.Unmarshal(data, &g); err != nil || g.Playbook != name || g.Hash == "" {
		return nil, errs.Failf("grants/%s.json does not parse as a grant (left as it is)", name).
			Advise(BadGrant, "name", name)
	}
	return &g, nil
}

// Approve records the playbook d (its bytes as read, the skills and
// sub-agents its text names as they are now) as what runs of playbook name
// may carry out (atomic, under the grants lock), and logs playbook.approve
// with the run: block's and the text's hashes to log: every approval,
// whichever command makes it.
func Approve(in instance.Instance, name string, d *Doc, now time.Time, log *audit.Logger) (*Grant, error) {
	g, err := approve(in, name, d, now)
	detail := map[string]any{"hash": RunHash(d.Meta.Run), "text_hash": hashBytes(d.Raw())}
	if g != nil && len(g.Assets) > 0 {
		var names []string
		for _, a := range g.Assets {
			names = append(names, a.Kind+" "+a.Name)
		}
		detail["assets"] = names
	}
	log.Record(audit.Entry{Event: "playbook.approve", Subject: name, Detail: detail}, err)
	return g, err
}

func approve(in instance.Instance, name string, d *Doc, now time.Time) (*Grant, error) {
	if !ValidName(name) {
		return nil, errs.Usagef("invalid playbook name %q", name)
	}
	if instance.InContainer() {
		return nil, errs.Usagef("playbooks are approved on the host, not in the agent's container")
	}
	assets, files, err := namedAssets(in, string(d.Raw()))
	if err != nil {
		return nil, err
	}
	root := in.FS()
	for _, dir := range []string{in.Grants(), filepath.Dir(in.Lock("grants"))} {
		if err := root.MkdirAll(dir, 0o700); err != nil {
			return nil, errs.Wrap(errs.Failure, err, "grants")
		}
	}
	unlock, err := root.Lock(in.Lock("grants"), 30*time.Second)
	if err != nil {
		return nil, err
	}
	defer unlock()
	g := &Grant{Playbook: name, Hash: RunHash(d.Meta.Run), Run: d.Meta.Run, TextHash: hashBytes(d.Raw()), Text: string(d.Raw()),
		Assets: assets, Approved: now.UTC().Truncate(time.Second), files: files}
	data, err := json.MarshalIndent(g, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := root.Write(grantPath(in, name), append(data, '\n'), 0o600); err != nil {
		return nil, errs.Wrap(errs.Failure, err, "grant of %s", name)
	}
	return g, nil
}

// CheckGrant reports whether playbook name as d holds it (its bytes, and
// the skills and sub-agents its text names as they are now) is what the
// user approved; the error says what changed and what to do.
func CheckGrant(in instance.Instance, name string, d *Doc) error {
	_, err := CheckedAssets(in, name, d)
	return err
}

// CheckedAssets is CheckGrant returning, when the playbook is approved as
// it is, the files of the skills and sub-agents its text names with the
// very bytes it checked against the approval: what a run of it is handed
// (Allowance.Assets), so that a file changed after the check changes
// nothing the run reads.
func CheckedAssets(in instance.Instance, name string, d *Doc) ([]AssetFile, error) {
	g, err := LoadGrant(in, name)
	if err != nil {
		return nil, err
	}
	review := func(e *errs.Error) error {
		return e.Advise(ChangedSinceApproval, "name", name)
	}
	switch {
	case g == nil:
		return nil, errs.Usagef("%s has not been approved: a session can edit playbooks, so a run carries out only a text you approved on the host", name).
			Advise(NotApproved, "name", name)
	case g.TextHash == "":
		return nil, errs.Usagef("%s was approved (%s) when approval covered only its run: block; a run now needs its whole text approved", name, g.Approved.Format(time.RFC3339)).
			Advise(ApprovedBlockOnly, "name", name)
	case g.TextHash != hashBytes(d.Raw()):
		what := "its text"
		if g.Hash != RunHash(d.Meta.Run) {
			what = "its run: block"
		}
		return nil, review(errs.Usagef("playbooks/%s.md changed since you approved it (%s): %s differs", name, g.Approved.Format(time.RFC3339), what))
	}
	now, files, err := namedAssets(in, string(d.Raw()))
	if err != nil {
		return nil, err
	}
	if ch := assetChanges(g.Assets, now); len(ch) > 0 {
		return nil, review(errs.Usagef("what %s uses changed since you approved it (%s): %s", name, g.Approved.Format(time.RFC3339), strings.Join(ch, "; ")))
	}
	if files == nil {
		files = []AssetFile{}
	}
	return files, nil
}

// WriteDiff prints what changed in playbook name (as d holds it) since it
// was approved: a unified diff of its text and a line per skill or
// sub-agent file changed, added or removed. It reports whether anything
// changed; a playbook never approved shows its whole text as added.
func WriteDiff(w io.Writer, in instance.Instance, name string, d *Doc) (bool, error) {
	g, err := LoadGrant(in, name)
	if err != nil {
		return false, err
	}
	if g == nil {
		g = &Grant{}
	}
	label := "approved"
	if !g.Approved.IsZero() {
		label += " " + g.Approved.Format(time.RFC3339)
	}
	changed := writeUnified(w, "playbooks/"+name+".md ("+label+")", "playbooks/"+name+".md (now)", g.Text, string(d.Raw()))
	now, err := NamedAssets(in, string(d.Raw()))
	if err != nil {
		return changed, err
	}
	for _, c := range assetChanges(g.Assets, now) {
		fmt.Fprintln(w, c)
		changed = true
	}
	return changed, nil
}

// assetChanges says, one line per file, how the assets now differ from
// those approved.
func assetChanges(approved, now []Asset) []string {
	files := func(as []Asset) map[string]string {
		m := map[string]string{}
		for _, a := range as {
			for p, h := range a.Files {
				m[p] = a.Kind + " " + a.Name + ": " + p + "\x00" + h
			}
		}
		return m
	}
	was, is := files(approved), files(now)
	var out []string
	for p, v := range is {
		w, ok := was[p]
		label, _, _ := strings.Cut(v, "\x00")
		switch {
		case !ok:
			out = append(out, label+" is new since the approval")
		case w != v:
			out = append(out, label+" changed")
		}
	}
	for p, w := range was {
		if _, ok := is[p]; !ok {
			label, _, _ := strings.Cut(w, "\x00")
			out = append(out, label+" is gone (or no longer named)")
		}
	}
	sort.Strings(out)
	return out
}

// assetNameRe is a skill or sub-agent name hobbs-init.sh links (and so
// one Claude Code can load).
var assetNameRe = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// NamedAssets returns the instance's skills (skills/NAME/) and custom
// sub-agents (agents/custom/NAME.md) whose name text mentions as a word,
// each with the hash of its files, by kind and name. A file over its cap,
// or a skill with more than instance.MaxSkillFiles files, is an error
// naming it: nothing hobbs did not read can be approved.
func NamedAssets(in instance.Instance, text string) ([]Asset, error) {
	as, _, err := namedAssets(in, text)
	return as, err
}

// AssetFile is one file of an approved skill or sub-agent, as a run gets
// it: its path relative to the instance (skills/NAME/..., agents/custom/
// NAME.md) and the bytes checked against the approval.
type AssetFile struct {
	Kind string // "skill" or "agent"
	Name string // the skill's or sub-agent's name
	Path string
	Data []byte
	// Exec: its owner could run it where it was read (a skill's script),
	// so the run's copy can be run too. The approval covers the bytes,
	// not the mode.
	Exec bool
}

// namedAssets is NamedAssets with the bytes it hashed: the regular files
// of each asset (an entry it does not read, a link, has none).
func namedAssets(in instance.Instance, text string) ([]Asset, []AssetFile, error) {
	var files []AssetFile
	root := in.FS()
	out := []Asset{}
	skills, err := root.ReadDir(in.Skills())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, errs.Wrap(errs.Failure, err, "skills")
	}
	for _, e := range skills {
		if !e.IsDir() || !assetNameRe.MatchString(e.Name()) || !mentions(text, e.Name()) {
			continue
		}
		a := Asset{Kind: "skill", Name: e.Name(), Files: map[string]string{}}
		err := root.Walk(filepath.Join(in.Skills(), e.Name()), func(p string, de fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if de.IsDir() {
				return nil
			}
			if len(a.Files) == instance.MaxSkillFiles {
				return errs.Failf("skill %s has more than %d files: hobbs does not approve what it does not read", e.Name(), instance.MaxSkillFiles)
			}
			rel := in.Rel(p)
			if why := safefile.Problem(de.Type()); why != "" {
				a.Files[rel] = why
				return nil
			}
			b, err := root.ReadFile(p, instance.MaxSkillFile)
			if err != nil {
				return err
			}
			a.Files[rel] = hashBytes(b)
			exec := false
			if fi, err := de.Info(); err == nil {
				exec = fi.Mode().Perm()&0o100 != 0
			}
			files = append(files, AssetFile{Kind: "skill", Name: e.Name(), Path: rel, Data: b, Exec: exec})
			return nil
		})
		if err != nil {
			return nil, nil, errs.Wrap(errs.Failure, err, "skill %s", e.Name())
		}
		out = append(out, a)
	}
	agents, err := root.ReadDir(in.AgentsCustom())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, errs.Wrap(errs.Failure, err, "agents")
	}
	for _, e := range agents {
		name, ok := strings.CutSuffix(e.Name(), ".md")
		if !ok || e.IsDir() || !assetNameRe.MatchString(name) || !mentions(text, name) {
			continue
		}
		p := filepath.Join(in.AgentsCustom(), e.Name())
		a := Asset{Kind: "agent", Name: name, Files: map[string]string{}}
		if why := safefile.Problem(e.Type()); why != "" {
			a.Files[in.Rel(p)] = why
		} else {
			b, err := root.ReadFile(p, instance.MaxAgentFile)
			if err != nil {
				return nil, nil, errs.Wrap(errs.Failure, err, "agent %s", name)
			}
			a.Files[in.Rel(p)] = hashBytes(b)
			files = append(files, AssetFile{Kind: "agent", Name: name, Path: in.Rel(p), Data: b})
		}
		out = append(out, a)
	}
	return out, files, nil
}

// mentions reports whether text holds name as a word: not inside a longer
// name (letters, digits, '_' and '-' around it do not count as a
// boundary), so /weekly-fetch and "the weekly-fetch skill" name the skill
// weekly-fetch, and weekly-fetch-all does not.
func mentions(text, name string) bool {
	word := func(c byte) bool {
		return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
	}
	for i := 0; ; {
		j := strings.Index(text[i:], name)
		if j < 0 {
			return false
		}
		s, e := i+j, i+j+len(name)
		if (s == 0 || !word(text[s-1])) && (e == len(text) || !word(text[e])) {
			return true
		}
		i = s + 1
	}
}
