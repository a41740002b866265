package instance

import (
	"bytes"
	"errors"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/errs"
)

// InitOptions configures Init.
type InitOptions struct {
	Templates fs.FS // the templates/ tree (files at its root)
	Git       bool  // make the instance a git repository
	// Foundation, when set, is asked to produce foundation.md from the
	// template the first time it is created (interactive co-creation).
	Foundation func(template []byte) ([]byte, error)
	// Audit, when set, records the run: the event init with what it
	// created (also when it created nothing, or failed half-way).
	Audit *audit.Logger
}

// InitResult says what Init did.
type InitResult struct {
	Root    string   `json:"root"`
	Created []string `json:"created"` // relative paths created by this run
	Kept    []string `json:"kept"`    // relative paths that already existed and were left alone
	Git     string   `json:"git,omitempty"`
}

// Init creates every missing path of the layout. It never modifies a path
// that exists: a second run creates only what is missing.
func Init(in Instance, opt InitOptions) (*InitResult, error) {
	res, err := initLayout(in, opt)
	if res != nil {
		opt.Audit.Record(audit.Entry{Event: "init", Subject: in.Root, Detail: map[string]any{"created": res.Created}}, err)
	}
	return res, err
}

func initLayout(in Instance, opt InitOptions) (*InitResult, error) {
	res := &InitResult{Root: in.Root, Created: []string{}, Kept: []string{}}
	root := in.FS()
	if err := root.MkdirAll(in.Root, 0o700); err != nil {
		return nil, errs.Wrap(errs.Failure, err, "create instance directory")
	}
	for _, e := range Layout() {
		p := in.Path(e)
		if _, err := root.Lstat(p); err == nil {
			res.Kept = append(res.Kept, e.Rel)
			continue
		} else if !errors.Is(err, fs.ErrNotExist) {
			return res, errs.Wrap(errs.Failure, err, "inspect %s", e.Rel)
		}
		if e.Dir {
			if err := root.Mkdir(p, e.Mode); err != nil {
				return res, errs.Wrap(errs.Failure, err, "create %s", e.Rel)
			}
			// Mkdir is subject to umask; set the mode we promise.
			if err := root.Chmod(p, e.Mode); err != nil {
				return res, err
			}
		} else {
			data, err := templateData(opt.Templates, e.Template)
			if err != nil {
				return res, err
			}
			if e.Rel == "foundation.md" && opt.Foundation != nil {
				if data, err = opt.Foundation(data); err != nil {
					return res, err
				}
			}
			if err := root.Create(p, data, e.Mode); err != nil {
				if errors.Is(err, fs.ErrExist) { // created concurrently: keep theirs
					res.Kept = append(res.Kept, e.Rel)
					continue
				}
				return res, errs.Wrap(errs.Failure, err, "create %s", e.Rel)
			}
		}
		res.Created = append(res.Created, e.Rel)
	}
	if opt.Git {
		msg, created, err := initGit(in, opt.Templates)
		if err != nil {
			return res, err
		}
		res.Git = msg
		if created {
			res.Created = append(res.Created, ".gitignore")
		}
	}
	return res, nil
}

func templateData(t fs.FS, name string) ([]byte, error) {
	if name == "" {
		return nil, nil
	}
	if t == nil {
		return nil, errs.Failf("no templates available for %s", name)
	}
	b, err := fs.ReadFile(t, name)
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "read template %s", name)
	}
	return b, nil
}

// gitMarker records that `hobbs init --git` made the instance's .git. It
// lives in .locks, which only the host writes (no session mounts it).
func (in Instance) gitMarker() string { return in.path(".locks", "git-init") }

// initGit makes the instance a git repository, or keeps the one it made
// before. A .git it did not make is refused: git runs what a repository's
// config names (core.fsmonitor, hooks…) at the user's next git status, and
// an agent of an older Hobbs, which mounted the whole instance, could have
// planted one.
func initGit(in Instance, t fs.FS) (msg string, createdIgnore bool, err error) {
	root := in.FS()
	data, err := templateData(t, "gitignore")
	if err != nil {
		return "", false, err
	}
	if err := root.Create(in.GitIgnore(), data, 0o644); err == nil {
		createdIgnore = true
	} else if !errors.Is(err, fs.ErrExist) {
		return "", false, errs.Wrap(errs.Failure, err, "create .gitignore")
	}
	dotGit := in.path(".git")
	if _, err := root.Lstat(dotGit); err == nil {
		fi, serr := root.Stat(dotGit)
		if serr == nil && fi.IsDir() && root.Exists(in.gitMarker()) {
			return "already a git repository", createdIgnore, nil
		}
		return "", createdIgnore, errs.Failf("%s exists but hobbs init --git did not create it; refusing to use it", dotGit).
			Advise(ForeignGit, "root", in.Root, "marker", in.gitMarker())
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", createdIgnore, errs.Wrap(errs.Failure, err, "inspect %s", dotGit)
	}
	git, err := exec.LookPath("git")
	if err != nil {
		return "", createdIgnore, errs.Missingf("git not found").Advise(NoGit)
	}
	out, err := exec.Command(git, "-C", in.Root, "init", "--quiet").CombinedOutput()
	if err != nil {
		return "", createdIgnore, errs.Failf("git init: %s", strings.TrimSpace(string(out)))
	}
	if err := root.MkdirAll(filepath.Dir(in.gitMarker()), 0o700); err != nil {
		return "", createdIgnore, errs.Wrap(errs.Failure, err, "record the new git repository")
	}
	note := []byte("hobbs init --git created .git here on " + time.Now().UTC().Format(time.RFC3339) + "\n")
	if err := root.Write(in.gitMarker(), note, 0o600); err != nil {
		return "", createdIgnore, errs.Wrap(errs.Failure, err, "record the new git repository")
	}
	return "initialised git repository", createdIgnore, nil
}

// AnswerFoundation returns doc with the section under "## heading"
// holding answer's items (separated by ';') as bullet points. An answer
// without items leaves doc as it is, so the section keeps its text.
func AnswerFoundation(doc []byte, heading, answer string) []byte {
	var items []string
	for _, it := range strings.Split(answer, ";") {
		if it = strings.TrimSpace(it); it != "" {
			items = append(items, "- "+it)
		}
	}
	if len(items) == 0 {
		return doc
	}
	return fillSection(doc, heading, strings.Join(items, "\n"))
}

// fillSection replaces the body of "## heading" (up to the next "## ") with
// body. A document without that heading (the user renamed or removed it)
// gets the section at its end, so an answer is never dropped.
func fillSection(doc []byte, heading, body string) []byte {
	lines := bytes.Split(doc, []byte("\n"))
	var out [][]byte
	found := false
	for i := 0; i < len(lines); i++ {
		out = append(out, lines[i])
		if strings.TrimSpace(string(lines[i])) != "## "+heading {
			continue
		}
		found = true
		out = append(out, []byte(""), []byte(body), []byte(""))
		for i+1 < len(lines) && !bytes.HasPrefix(lines[i+1], []byte("## ")) {
			i++
		}
	}
	if !found {
		doc = bytes.TrimRight(doc, "\n")
		return append(doc, []byte("\n\n## "+heading+"\n\n"+body+"\n")...)
	}
	return bytes.Join(out, []byte("\n"))
}
