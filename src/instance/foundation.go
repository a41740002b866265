package instance

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/errs"
)

// FoundationTemplateOnly reports whether a foundation.md holds nothing the
// user wrote: no section under a "## " heading has text outside HTML
// comments (the template's placeholders are comments). A file without such
// headings is the user's own form, template-only only when it is blank.
func FoundationTemplateOnly(doc []byte) bool {
	text := StripComments(string(doc))
	sawHeading := false
	for _, line := range strings.Split(text, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(t, "## "):
			sawHeading = true
		case t == "":
		case sawHeading:
			return false
		}
	}
	return sawHeading || strings.TrimSpace(text) == ""
}

// StripComments removes HTML comments (guidance for the person editing a
// Markdown file, not part of what it says); an unclosed one runs to the end.
func StripComments(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "<!--")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		j := strings.Index(s[i+4:], "-->")
		if j < 0 {
			return b.String()
		}
		s = s[i+4+j+3:]
	}
}

// FoundationRedo is what RedoFoundation did.
type FoundationRedo struct {
	Root    string `json:"root"`
	Changed bool   `json:"changed"`          // foundation.md was rewritten
	Backup  string `json:"backup,omitempty"` // where the previous text was kept (relative path)
}

// RedoFoundation runs interview over the current foundation.md and writes
// what it returns. A foundation that holds the user's own text (not
// template-only) is rewritten only when confirm says yes, and its previous
// text is first kept in foundation.md.TIME.bak next to it; without a yes
// nothing changes and the error says so. The interview starts from the
// current text, so what it does not ask about is kept. A foundation.md that
// cannot be read (a link, a special file) is reported and left as it is.
// The host-only "foundation" lock serialises reruns. The audit event
// init.foundation records whether it changed and where the backup went.
func RedoFoundation(in Instance, interview func(current []byte) ([]byte, error), confirm func() (bool, error), log *audit.Logger) (*FoundationRedo, error) {
	res, err := redoFoundation(in, interview, confirm)
	detail := map[string]any{}
	if res != nil {
		detail["changed"] = res.Changed
		if res.Backup != "" {
			detail["backup"] = res.Backup
		}
	}
	log.Record(audit.Entry{Event: "init.foundation", Subject: in.Foundation(), Detail: detail}, err)
	return res, err
}

// FillTemplateFoundation runs interview over a foundation.md that is still
// the template (FoundationTemplateOnly), as RedoFoundation does; it does
// nothing (nil, nil) when the file holds the user's own text or cannot be
// read (doctor reports that).
func FillTemplateFoundation(in Instance, interview func(current []byte) ([]byte, error), log *audit.Logger) (*FoundationRedo, error) {
	cur, err := in.FS().ReadFile(in.Foundation(), MaxTextFile)
	if err != nil || !FoundationTemplateOnly(cur) {
		return nil, nil
	}
	return RedoFoundation(in, interview, func() (bool, error) { return false, nil }, log)
}

func redoFoundation(in Instance, interview func(current []byte) ([]byte, error), confirm func() (bool, error)) (*FoundationRedo, error) {
	res := &FoundationRedo{Root: in.Root}
	root := in.FS()
	if err := root.MkdirAll(in.Locks(), 0o700); err != nil {
		return nil, errs.Wrap(errs.Failure, err, "create %s", in.Rel(in.Locks()))
	}
	unlock, err := root.Lock(in.Lock("foundation"), 30*time.Second)
	if err != nil {
		return nil, errs.Wrap(errs.Failure, err, "lock foundation.md")
	}
	defer unlock()
	cur, err := root.ReadFile(in.Foundation(), MaxTextFile)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errs.Failf("%s does not exist", in.Foundation()).Advise(NoFoundation)
		}
		return nil, errs.Wrap(errs.Failure, err, "read foundation.md")
	}
	own := !FoundationTemplateOnly(cur)
	if own {
		ok, err := confirm()
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, errs.Failf("foundation.md holds your own text; not changed").
				Advise(FoundationKept, "path", in.Foundation())
		}
	}
	next, err := interview(cur)
	if err != nil {
		return nil, err
	}
	if bytes.Equal(next, cur) {
		return res, nil
	}
	if own {
		name := fmt.Sprintf("foundation.md.%s.bak", time.Now().UTC().Format("20060102T150405Z"))
		p := filepath.Join(in.Root, name)
		if err := root.Create(p, cur, 0o600); err != nil {
			return nil, errs.Wrap(errs.Failure, err, "keep the current foundation.md in %s", name)
		}
		res.Backup = name
	}
	if err := root.Write(in.Foundation(), next, 0o644); err != nil {
		return res, errs.Wrap(errs.Failure, err, "write foundation.md")
	}
	res.Changed = true
	return res, nil
}
