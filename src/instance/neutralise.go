package instance

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/safefile"
	"golang.org/x/sys/unix"
)

// HostTrusted are the names host tools act on when they find them in a
// directory: what each makes the tool run or load. None may stay in a
// share the agent writes, where the user may run git, or cd with direnv,
// or open an editor: a planted .git runs its fsmonitor on the next git
// status there. Neutralise moves them aside.
var HostTrusted = map[string]string{
	".git":       "git runs its hooks and fsmonitor from it",
	".hg":        "Mercurial runs the hooks of its hgrc",
	".jj":        "Jujutsu reads its repository configuration",
	".sl":        "Sapling runs the hooks of its configuration",
	".bzr":       "Bazaar loads its branch configuration",
	".svn":       "Subversion reads its working copy",
	"_darcs":     "darcs runs the hooks of its preferences",
	".envrc":     "direnv loads it into your shell",
	".env":       "direnv (load_dotenv) and other tools load it into the environment",
	".vscode":    "VS Code runs its tasks and applies its settings",
	".mise.toml": "mise runs its hooks and sets its environment",
	"mise.toml":  "mise runs its hooks and sets its environment",
	".mise":      "mise reads its configuration",
}

// MaxShareDepth is how many directory levels below a share Neutralise
// walks; a deeper tree is reported, not walked.
const MaxShareDepth = 64

// Quarantine is the host-only directory where Neutralise moves what it
// takes out of the shares (no session mounts it).
func (in Instance) Quarantine() string { return in.path("quarantine") }

// Quarantined is one entry Neutralise moved: from its place in a share
// to the quarantine, both relative to the instance root.
type Quarantined struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Neutralise moves every HostTrusted entry found in the directories the
// agent writes (AgentShares) out of them, into
// quarantine/STAMP-TAG/SHARE/…/NAME.quarantined, keeping its content for
// the user to inspect: renamed as an entry (a link stays a link, nothing
// is followed or read), under a name no tool acts on. On a filesystem that
// cannot rename into the quarantine, the entry is renamed in place to
// NAME.quarantined-STAMP. It returns what it moved, records it as the
// audit event instance.quarantine, and reports a share it could not walk
// whole (a link in its place, a tree deeper than MaxShareDepth) in its
// error after moving what it found.
func (in Instance) Neutralise(tag string, now time.Time, log *audit.Logger) ([]Quarantined, error) {
	root := in.FS()
	stamp := now.UTC().Format("20060102T150405Z")
	if tag != "" {
		stamp += "-" + tag
	}
	var moved []Quarantined
	var problems []error
	for _, sh := range AgentShares() {
		if !sh.Dir || sh.ReadOnly {
			continue
		}
		dir := filepath.Join(in.Root, filepath.FromSlash(sh.Rel))
		err := root.FindNames(dir, hostTrustedNames(), MaxShareDepth, func(p string) error {
			q, err := in.quarantine(root, p, stamp)
			if err != nil {
				problems = append(problems, err)
				return nil
			}
			moved = append(moved, q)
			return nil
		})
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			problems = append(problems, err)
		}
	}
	err := errors.Join(problems...)
	if len(moved) > 0 || err != nil {
		var from []string
		for _, m := range moved {
			from = append(from, m.From)
		}
		log.Record(audit.Entry{Event: "instance.quarantine", Subject: in.Root, Detail: map[string]any{"moved": from, "tag": tag}}, err)
	}
	return moved, err
}

func hostTrustedNames() map[string]bool {
	m := map[string]bool{}
	for n := range HostTrusted {
		m[n] = true
	}
	return m
}

// quarantine moves the entry at p (absolute, in a share) aside.
func (in Instance) quarantine(root safefile.Root, p, stamp string) (Quarantined, error) {
	rel := in.Rel(p)
	to := filepath.Join(in.Quarantine(), stamp, rel+".quarantined")
	if err := root.MkdirAll(filepath.Dir(to), 0o700); err == nil {
		err = root.Rename(p, to)
		if err == nil {
			return Quarantined{From: filepath.ToSlash(rel), To: filepath.ToSlash(in.Rel(to))}, nil
		}
		if !errors.Is(err, unix.EXDEV) {
			return Quarantined{}, err
		}
	}
	// Another filesystem: an inert name in place.
	to = p + ".quarantined-" + stamp
	if err := root.Rename(p, to); err != nil {
		return Quarantined{}, err
	}
	return Quarantined{From: filepath.ToSlash(rel), To: filepath.ToSlash(in.Rel(to))}, nil
}

// QuarantineList lists the entries Neutralise moved into the quarantine
// (relative to the instance root, sorted), for hobbs doctor.
func (in Instance) QuarantineList() ([]string, error) {
	var out []string
	root := in.FS()
	err := root.FindNames(in.Quarantine(), quarantinedNames(), MaxShareDepth+4, func(p string) error {
		out = append(out, filepath.ToSlash(in.Rel(p)))
		return nil
	})
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	sort.Strings(out)
	return out, err
}

func quarantinedNames() map[string]bool {
	m := map[string]bool{}
	for n := range HostTrusted {
		m[n+".quarantined"] = true
	}
	return m
}

// TrustedIn describes a HostTrusted entry at rel (slash-separated,
// relative to the root) of a share: "" when rel is not one.
func TrustedIn(rel string) string {
	name := rel[strings.LastIndex(rel, "/")+1:]
	why, ok := HostTrusted[name]
	if !ok {
		return ""
	}
	for _, sh := range AgentShares() {
		if sh.Dir && !sh.ReadOnly && strings.HasPrefix(rel, sh.Rel+"/") {
			return fmt.Sprintf("%s in a share the agent writes (%s); the next session's start or end moves it to quarantine/", name, why)
		}
	}
	return ""
}

// NeutraliseLayer is Neutralise for a session's layer of share: the
// directory upper (absolute, in the instance's host-only layers/) holds
// what the session wrote to the share, and every HostTrusted entry in it
// moves to quarantine/STAMP-TAG/SHARE/…/NAME.quarantined before anything
// of the layer is merged, reported as if found in the share.
func (in Instance) NeutraliseLayer(upper, share, tag string, now time.Time, log *audit.Logger) ([]Quarantined, error) {
	root := in.FS()
	stamp := now.UTC().Format("20060102T150405Z")
	if tag != "" {
		stamp += "-" + tag
	}
	var moved []Quarantined
	var problems []error
	err := root.FindNames(upper, hostTrustedNames(), MaxShareDepth, func(p string) error {
		rel, err := filepath.Rel(upper, p)
		if err != nil {
			return err
		}
		from := filepath.ToSlash(filepath.Join(share, rel))
		to := filepath.Join(in.Quarantine(), stamp, filepath.FromSlash(from)+".quarantined")
		if err := root.MkdirAll(filepath.Dir(to), 0o700); err != nil {
			problems = append(problems, err)
			return nil
		}
		if err := root.Rename(p, to); err != nil {
			problems = append(problems, err)
			return nil
		}
		moved = append(moved, Quarantined{From: from, To: filepath.ToSlash(in.Rel(to))})
		return nil
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		problems = append(problems, err)
	}
	err = errors.Join(problems...)
	if len(moved) > 0 || err != nil {
		var from []string
		for _, m := range moved {
			from = append(from, m.From)
		}
		log.Record(audit.Entry{Event: "instance.quarantine", Subject: in.Root, Detail: map[string]any{"moved": from, "tag": tag}}, err)
	}
	return moved, err
}
