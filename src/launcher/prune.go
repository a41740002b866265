package launcher

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/hobbs-agent/hobbs/src/engine"
)

// PruneResult says what Prune removed and what it kept.
type PruneResult struct {
	Removed []string    `json:"removed"`
	Kept    []KeptImage `json:"kept,omitempty"`
	DryRun  bool        `json:"dry_run,omitempty"`
}

// KeptImage is an image Prune would have removed but the engine refused
// (a container uses it, or another image is built on it).
type KeptImage struct {
	Image  string `json:"image"`
	Reason string `json:"reason"`
}

// WriteSummary prints the result for a reader, a line per image: what was
// removed (or would be, in a dry run), what the engine kept and why, or
// that there was nothing to remove.
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
	return nil
}

// Prune removes the images Hobbs built (labelled LabelRole) that nothing
// uses: Hobbs images under any name but those in keep, and runtime bases no
// name refers to any more (replaced by a rebuild). A runtime base that has a
// name may be any instance's base_image and is kept, as is an image with a
// registry name (getting it again needs the network). Images go without
// force, so the engine keeps those a container (running or not) still uses
// or another image is built on; they are reported in Kept. With dryRun
// nothing is removed and Removed lists what would be.
func Prune(ctx context.Context, e engine.CLI, keep []string, dryRun bool) (*PruneResult, error) {
	var refs []string
	kept := map[string]bool{}
	for _, k := range keep {
		kept[k] = true
	}
	for _, q := range []struct{ role, extra string }{{RoleImage, ""}, {RoleRuntime, "dangling=true"}} {
		args := []string{"image", "ls", "--no-trunc", "--filter", "label=" + LabelRole + "=" + q.role}
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
				refs = append(refs, id) // no name: what a rebuild replaced
			case q.role == RoleRuntime, kept[ref], IsRegistryRef(ref):
			default:
				refs = append(refs, ref)
			}
		}
	}
	res := &PruneResult{Removed: []string{}, DryRun: dryRun}
	seen := map[string]bool{}
	for _, ref := range refs {
		if seen[ref] {
			continue
		}
		seen[ref] = true
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
