package doctor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/safefile"
	"github.com/hobbs-agent/hobbs/src/style"
)

// The kinds of advice the instance's checks give; cmd/hobbs words them
// (hints_doctor.go). Facts: path (a path on the host), mode (a file mode,
// 0700).
const (
	NoInstance           errs.Kind = "doctor.no-instance"
	LayoutIncomplete     errs.Kind = "doctor.layout-incomplete"
	FoundationUnreadable errs.Kind = "doctor.foundation-unreadable"
	FoundationTemplate   errs.Kind = "doctor.foundation-template"
	UntrustedEntries     errs.Kind = "doctor.untrusted-entries"
	UnreadablePaths      errs.Kind = "doctor.unreadable-paths"
	QuarantineUnreadable errs.Kind = "doctor.quarantine-unreadable"
	QuarantineHolds      errs.Kind = "doctor.quarantine-holds"
	ModeTooOpen          errs.Kind = "doctor.mode-too-open"
	ConfigInvalid        errs.Kind = "doctor.config-invalid"
)

// InstanceLayout: the instance exists (a missing one is a missing dependency:
// doctor exits 3) and every path of its layout is there, of its kind. A link
// or special file in a layout path's place is not missing: instance.files
// names it.
func InstanceLayout(_ context.Context, env *Env) []Result {
	if !env.Instance.Exists() {
		return []Result{{Status: Fail, Missing: true, Message: "no Hobbs instance at " + env.Instance.Root,
			Advice: errs.NewAdvice(NoInstance)}}
	}
	var missing []string
	for _, e := range instance.Layout() {
		fi, err := env.Instance.FS().Stat(env.Instance.Path(e))
		if errors.Is(err, safefile.ErrUnsafe) {
			continue
		}
		if err != nil || fi.IsDir() != e.Dir {
			missing = append(missing, e.Rel)
		}
	}
	if len(missing) > 0 {
		return []Result{{Status: Fail,
			Message: fmt.Sprintf("%s: missing %s", env.Instance.Root, strings.Join(missing, ", ")),
			Advice:  errs.NewAdvice(LayoutIncomplete)}}
	}
	return []Result{{Status: OK, Message: env.Instance.Root + ": layout complete"}}
}

// InstanceFoundation warns when foundation.md still holds only the template:
// every session then gets the template's placeholder comments instead of the
// user's values and goals. A missing file is instance.layout's to report, a
// link or special file instance.files'.
func InstanceFoundation(_ context.Context, env *Env) []Result {
	data, err := env.Instance.FS().ReadFile(env.Instance.Foundation(), instance.MaxTextFile)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, safefile.ErrUnsafe):
		return nil
	case err != nil:
		return []Result{{Status: Fail, Message: err.Error(), Advice: errs.NewAdvice(FoundationUnreadable)}}
	}
	if instance.FoundationTemplateOnly(data) {
		return []Result{{Status: Warn,
			Message: "foundation.md holds only the template: sessions get its placeholders, not your values and goals",
			Advice:  errs.NewAdvice(FoundationTemplate, "path", env.Instance.Foundation())}}
	}
	return []Result{{Status: OK, Message: "foundation.md is filled in"}}
}

// maxListed bounds how many paths a result names.
const maxListed = 20

// InstanceFiles walks the whole instance without following links and fails on
// anything hobbs never creates there and an agent could plant to make the
// host follow or run it: a symbolic link, a FIFO, a socket, a device, a file
// with the setuid or setgid bit, a .git below the root, and, outside the
// directories the agent writes, a file with more than one hard link. Any path
// may hold one, not only those the agent's container writes: an instance may
// have been mounted whole into an agent's container.
func InstanceFiles(_ context.Context, env *Env) []Result {
	in := env.Instance
	var found, unreadable []string
	err := in.FS().Walk(in.Root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == in.Root && errors.Is(err, fs.ErrNotExist) {
				return nil // no instance yet: instance.layout says so
			}
			unreadable = append(unreadable, err.Error())
			return nil
		}
		if p == in.Root {
			return nil
		}
		rel := filepath.ToSlash(in.Rel(p))
		if rel == "quarantine" {
			return fs.SkipDir // hostile by definition: instance.quarantine lists it
		}
		if rel == "layers" {
			// Sessions' layers (src/layer): hard links to the files in
			// effect, overlayfs's removal marks and work directories;
			// host-only, never read as anything but a layer.
			return fs.SkipDir
		}
		why := untrusted(d)
		switch {
		case why != "":
		case instance.TrustedIn(rel) != "":
			why = instance.TrustedIn(rel)
		case d.Name() == ".git" && rel != ".git":
			// git on the host uses it when run there, or from the
			// instance's own repository (an embedded repository).
			why = "a git repository inside the instance: git on the host would run its configuration"
		case d.Type().IsRegular() && !inDirShare(rel):
			// A hard link between a file the agent writes and one it must
			// not (policy.yaml, a vault key) lets it write the latter.
			if fi, err := d.Info(); err == nil {
				if st, ok := fi.Sys().(*unix.Stat_t); ok && st.Nlink > 1 {
					why = fmt.Sprintf("%d hard links: a file the agent can write may be the same file", st.Nlink)
				}
			}
		}
		if why != "" {
			found = append(found, rel+" ("+why+")")
		}
		return nil
	})
	if err != nil {
		unreadable = append(unreadable, err.Error())
	}
	var out []Result
	if len(found) > 0 {
		out = append(out, Result{Status: Fail,
			Message: fmt.Sprintf("%s in the instance (hobbs refuses them): %s", style.N(len(found), "untrusted entry", "untrusted entries"), capList(found)),
			Advice:  errs.NewAdvice(UntrustedEntries)})
	}
	if len(unreadable) > 0 {
		out = append(out, Result{Status: Warn,
			Message: fmt.Sprintf("%s could not be read: %s", style.N(len(unreadable), "path", "paths"), capList(unreadable)),
			Advice:  errs.NewAdvice(UnreadablePaths)})
	}
	if len(out) == 0 {
		out = append(out, Result{Status: OK, Message: "no links, FIFOs, sockets, devices or setuid/setgid files"})
	}
	return out
}

// InstanceQuarantine names what a session's start or end moved out of the
// shares (instance.Neutralise): kept for the user to inspect, where no
// session reaches it.
func InstanceQuarantine(_ context.Context, env *Env) []Result {
	list, err := env.Instance.QuarantineList()
	switch {
	case err != nil:
		return []Result{{Status: Warn, Message: "the quarantine could not be read: " + err.Error(),
			Advice: errs.NewAdvice(QuarantineUnreadable, "path", env.Instance.Quarantine())}}
	case len(list) == 0:
		return []Result{{Status: OK, Message: "nothing moved out of the shares"}}
	}
	return []Result{{Status: Warn,
		Message: fmt.Sprintf("%d entries a session left in the shares for host tools (a .git, an .envrc…) were moved aside: %s", len(list), capList(list)),
		Advice:  errs.NewAdvice(QuarantineHolds, "path", env.Instance.Quarantine())}}
}

// inDirShare reports whether rel (slash-separated, relative to the root)
// lies in a directory the agent's container writes.
func inDirShare(rel string) bool {
	for _, sh := range instance.AgentShares() {
		if sh.Dir && (rel == sh.Rel || strings.HasPrefix(rel, sh.Rel+"/")) {
			return true
		}
	}
	return false
}

// untrusted says what is wrong with an instance entry, or "".
func untrusted(d fs.DirEntry) string {
	if why := safefile.Problem(d.Type()); why != "" || d.IsDir() {
		return why // setgid on a directory is inherited and runs nothing
	}
	fi, err := d.Info()
	if err != nil {
		return ""
	}
	switch m := fi.Mode(); {
	case m&fs.ModeSetuid != 0 && m&fs.ModeSetgid != 0:
		return "setuid and setgid"
	case m&fs.ModeSetuid != 0:
		return "setuid"
	case m&fs.ModeSetgid != 0:
		return "setgid"
	}
	return ""
}

// capList joins up to maxListed items and says how many more there are.
func capList(items []string) string {
	if len(items) <= maxListed {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:maxListed], ", "), len(items)-maxListed)
}

// InstancePermissions: the layout's private paths (vault/keys…) and every
// key file under vault/keys are open to no one but the user.
func InstancePermissions(_ context.Context, env *Env) []Result {
	var out []Result
	for _, e := range instance.Layout() {
		if !e.Strict {
			continue
		}
		p := env.Instance.Path(e)
		fi, err := env.Instance.FS().Stat(p)
		if err != nil {
			continue // reported by the layout check
		}
		if perm := fi.Mode().Perm(); perm&^e.Mode != 0 {
			out = append(out, Result{Status: Fail,
				Message: fmt.Sprintf("%s is %04o, must be %04o", e.Rel, perm, e.Mode),
				Advice:  errs.NewAdvice(ModeTooOpen, "mode", fmt.Sprintf("%04o", e.Mode), "path", p)})
		}
	}
	// Key material: every file under vault/keys must be private.
	keys := env.Instance.VaultKeys()
	ents, _ := env.Instance.FS().ReadDir(keys)
	for _, d := range ents {
		p := filepath.Join(keys, d.Name())
		fi, err := d.Info()
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			out = append(out, Result{Status: Fail,
				Message: fmt.Sprintf("vault/keys/%s is %04o, must be 0600", d.Name(), perm),
				Advice:  errs.NewAdvice(ModeTooOpen, "mode", "0600", "path", p)})
		}
	}
	if len(out) == 0 {
		out = append(out, Result{Status: OK, Message: "vault/keys is 0700 and key files are private"})
	}
	return out
}

// Config: config.yaml is valid (the command loaded it into env, with its
// error).
func Config(_ context.Context, env *Env) []Result {
	if env.ConfigErr != nil {
		return []Result{{Status: Fail, Message: firstLine(env.ConfigErr.Error()),
			Advice: errs.NewAdvice(ConfigInvalid)}}
	}
	return []Result{{Status: OK, Message: env.Instance.Rel(env.Instance.Config()) + " is valid"}}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " (…)"
	}
	return s
}
