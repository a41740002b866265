package image

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/hobbs-agent/hobbs/src/engine"
	"github.com/hobbs-agent/hobbs/src/plan"
	"github.com/hobbs-agent/hobbs/src/style"
)

// LabelUser is on every image hobbs builds: the uid of the user whose
// hobbs built it. hobbs prune removes only the images of its own user, so
// that on an engine several users share, one user's prune never removes
// another's images.
const LabelUser = "dev.hobbs.user"

// BuildUser is this process's value of LabelUser.
func BuildUser() string { return strconv.Itoa(os.Getuid()) }

// PruneResult says what Prune removed, what it kept and what it left.
type PruneResult struct {
	Removed []string    `json:"removed"`
	Kept    []KeptImage `json:"kept,omitempty"`
	// Left are the images Prune would have removed were they this
	// user's: another user's hobbs built them, or a hobbs that did not
	// label images with their user yet.
	Left   []string `json:"left,omitempty"`
	User   string   `json:"user"`
	DryRun bool     `json:"dry_run,omitempty"`
}

// KeptImage is an image Prune would have removed but the engine refused
// (a container uses it, or another image is built on it).
type KeptImage struct {
	Image  string `json:"image"`
	Reason string `json:"reason"`
}

// WriteSummary prints the result for a reader, a line per image: what was
// removed (or would be, in a dry run), what the engine kept and why, or
// that there was nothing to remove; then the images left to other users.
func (r *PruneResult) WriteSummary(w io.Writer) error {
	verb := "removed"
	if r.DryRun {
		verb = "would remove"
	}
	for _, img := range r.Removed {
		fmt.Fprintf(w, "%s %s\n", verb, img)
	}
	for _, k := range r.Kept {
		fmt.Fprintf(w, "kept %s: %s\n", k.Image, k.Reason)
	}
	if len(r.Removed) == 0 && len(r.Kept) == 0 {
		fmt.Fprintln(w, "nothing to remove")
	}
	if len(r.Left) > 0 {
		fmt.Fprintf(w, "left %s not labelled %s=%s (another user's hobbs built them, or a hobbs older than this one): %s\n",
			style.N(len(r.Left), "Hobbs image", "Hobbs images"), LabelUser, r.User, strings.Join(r.Left, ", "))
	}
	return nil
}

// Prune removes the images this user's hobbs built (labelled LabelRole,
// and LabelUser with this user's uid) that nothing uses: Hobbs images
// under any name but those in keep, and runtime bases no name refers to
// any more (replaced by a rebuild). A runtime base that has a name may be
// any instance's base_image and is kept, as is an image with a registry
// name (getting it again needs the network). Images go without force, so
// the engine keeps those a container (running or not) still uses or
// another image is built on; they are reported in Kept. Images that would
// go but are not this user's are reported in Left. With dryRun nothing is
// removed and Removed lists what would be.
func Prune(ctx context.Context, e engine.CLI, keep []string, dryRun bool) (*PruneResult, error) {
	user := BuildUser()
	mine, err := pruneCandidates(ctx, e, keep, user)
	if err != nil {
		return nil, err
	}
	all, err := pruneCandidates(ctx, e, keep, "")
	if err != nil {
		return nil, err
	}
	res := &PruneResult{Removed: []string{}, User: user, DryRun: dryRun}
	ours := map[string]bool{}
	for _, ref := range mine {
		ours[ref] = true
	}
	for _, ref := range all {
		if !ours[ref] {
			res.Left = append(res.Left, ref)
		}
	}
	for _, ref := range mine {
		if dryRun {
			res.Removed = append(res.Removed, ref)
			continue
		}
		if _, err := e.Output(ctx, "image", "rm", ref); err != nil {
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			res.Kept = append(res.Kept, KeptImage{Image: ref, Reason: err.Error()})
			continue
		}
		res.Removed = append(res.Removed, ref)
	}
	return res, nil
}

// pruneCandidates are the images Prune removes, once each: of user's
// hobbs when user is set, of any hobbs when it is "".
func pruneCandidates(ctx context.Context, e engine.CLI, keep []string, user string) ([]string, error) {
	var refs []string
	kept := map[string]bool{}
	for _, k := range keep {
		kept[k] = true
	}
	seen := map[string]bool{}
	for _, q := range []struct{ role, extra string }{{RoleImage, ""}, {RoleRuntime, "dangling=true"}} {
		args := []string{"image", "ls", "--no-trunc", "--filter", "label=" + plan.LabelRole + "=" + q.role}
		if user != "" {
			args = append(args, "--filter", "label="+LabelUser+"="+user)
		}
		if q.extra != "" {
			args = append(args, "--filter", q.extra)
		}
		out, err := e.Output(ctx, append(args, "--format", "{{.ID}} {{.Repository}}:{{.Tag}}")...)
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(out, "\n") {
			id, ref, ok := strings.Cut(strings.TrimSpace(line), " ")
			if !ok {
				continue
			}
			switch {
			case ref == "<none>:<none>" || strings.HasSuffix(ref, ":<none>"):
				ref = id // no name: what a rebuild replaced
			case q.role == RoleRuntime, kept[ref], IsRegistryRef(ref):
				continue
			}
			if !seen[ref] {
				seen[ref] = true
				refs = append(refs, ref)
			}
		}
	}
	return refs, nil
}
