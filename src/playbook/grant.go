package playbook

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
)

// Grants. A playbook lives in playbooks/, which the agent's sessions can
// write: its run: block is the agent's to change, and a headless run must
// not get a host, secret or tool because a session wrote it there. What a
// run may have is what the user approved on the host: a grant, one JSON
// file per playbook in the instance's grants/ directory, which no session
// mounts. A run whose run: block differs from its grant is refused until
// the user approves the new block (hobbs playbook approve, or the prompt of
// a run on a terminal); hobbs schedule add and hobbs playbook allow, host
// commands, approve what they write.

// Grant is an approved run: block.
type Grant struct {
	Playbook string    `json:"playbook"`
	Hash     string    `json:"hash"` // RunHash of the approved block
	Run      *Run      `json:"run"`
	Approved time.Time `json:"approved"`
}

// RunHash identifies a run: block's content (nil: no block).
func RunHash(r *Run) string {
	if r == nil {
		return "none"
	}
	b, _ := json.Marshal(r)
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
			WithHint("remove it, then approve the playbook's run: block again: hobbs playbook approve %s", name)
	}
	return &g, nil
}

// Approve records r as what runs of playbook name may have (atomic, under
// the grants lock), and logs playbook.approve with r's hash to log: every
// approval, whichever command makes it.
func Approve(in instance.Instance, name string, r *Run, now time.Time, log *audit.Logger) (*Grant, error) {
	g, err := approve(in, name, r, now)
	log.Record(audit.Entry{Event: "playbook.approve", Subject: name, Detail: map[string]any{"hash": RunHash(r)}}, err)
	return g, err
}

func approve(in instance.Instance, name string, r *Run, now time.Time) (*Grant, error) {
	if !ValidName(name) {
		return nil, errs.Usagef("invalid playbook name %q", name)
	}
	root := in.FS()
	for _, d := range []string{in.Grants(), filepath.Dir(in.Lock("grants"))} {
		if err := root.MkdirAll(d, 0o700); err != nil {
			return nil, errs.Wrap(errs.Failure, err, "grants")
		}
	}
	unlock, err := root.Lock(in.Lock("grants"), 30*time.Second)
	if err != nil {
		return nil, err
	}
	defer unlock()
	g := &Grant{Playbook: name, Hash: RunHash(r), Run: r, Approved: now.UTC().Truncate(time.Second)}
	data, err := json.MarshalIndent(g, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := root.Write(grantPath(in, name), append(data, '\n'), 0o600); err != nil {
		return nil, errs.Wrap(errs.Failure, err, "grant of %s", name)
	}
	return g, nil
}

// CheckGrant reports whether the run: block r of playbook name is the one
// the user approved; the error says what to do when it is not.
func CheckGrant(in instance.Instance, name string, r *Run) error {
	g, err := LoadGrant(in, name)
	if err != nil {
		return err
	}
	if g == nil {
		return errs.Usagef("the run: block of %s has not been approved: a session can edit playbooks, so a run gets only what you approved on the host", name).
			WithHint("review it (hobbs playbook run %s --dry-run), then: hobbs playbook approve %s", name, name)
	}
	if g.Hash != RunHash(r) {
		return errs.Usagef("the run: block of %s changed since you approved it (%s)", name, g.Approved.Format(time.RFC3339)).
			WithHint("review the change (hobbs playbook run %s --dry-run shows what a run would get), then: hobbs playbook approve %s", name, name)
	}
	return nil
}
