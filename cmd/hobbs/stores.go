package main

// What a command works on: the instance, and the stores in it. Each with*
// function is the RunE of a command that needs one: it opens it the same way
// for every command (the same errors and hints when there is no instance, the
// same warnings) and hands it to the command's body.

import (
	"io/fs"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hobbs-agent/hobbs"
	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/memory"
	"github.com/hobbs-agent/hobbs/src/playbook"
	"github.com/hobbs-agent/hobbs/src/style"
	"github.com/hobbs-agent/hobbs/src/task"
	"github.com/hobbs-agent/hobbs/src/vault"
)

// runE is a cobra RunE.
type runE = func(cmd *cobra.Command, args []string) error

// instance resolves the instance directory.
func (a *app) instance() (instance.Instance, error) { return instance.Resolve(a.instanceFlag) }

// existingInstance resolves the instance and fails with a hint when it has
// not been initialised.
func (a *app) existingInstance() (instance.Instance, error) {
	in, err := a.instance()
	if err != nil {
		return in, err
	}
	if !in.Exists() {
		return in, withHint(errs.Missingf("no Hobbs instance at %s", in.Root), "run: %s", initCommand(in))
	}
	return in, nil
}

// initCommand is the hobbs init that creates in: plain for the instance
// hobbs finds without --instance (HOBBS_HOME, else the default), else
// with --instance naming it (a plain hobbs init would create another).
func initCommand(in instance.Instance) string {
	if def, err := instance.Resolve(""); err == nil && def.Root == in.Root {
		return "hobbs init"
	}
	root := in.Root
	if strings.ContainsAny(root, " '\"$`\\") {
		root = "'" + strings.ReplaceAll(root, "'", `'\''`) + "'"
	}
	return "hobbs --instance " + root + " init"
}

// withInstance runs body with the instance, which need not exist yet.
func (a *app) withInstance(body func(cmd *cobra.Command, args []string, in instance.Instance) error) runE {
	return func(cmd *cobra.Command, args []string) error {
		in, err := a.instance()
		if err != nil {
			return err
		}
		return body(cmd, args, in)
	}
}

// withExistingInstance runs body with the instance, failing with a hint
// when it has not been initialised.
func (a *app) withExistingInstance(body func(cmd *cobra.Command, args []string, in instance.Instance) error) runE {
	return func(cmd *cobra.Command, args []string) error {
		in, err := a.existingInstance()
		if err != nil {
			return err
		}
		return body(cmd, args, in)
	}
}

// withMemory runs body with the memory store of the existing instance. The
// malformed files the store met are reported on stderr, with the way to
// list them, before the body's result, or when the body ends without
// printing one.
func (a *app) withMemory(body func(cmd *cobra.Command, args []string, s *memory.Store) error) runE {
	return a.withExistingInstance(func(cmd *cobra.Command, args []string, in instance.Instance) error {
		s := memory.Open(in, a.audit(in))
		a.problems = func() {
			probs := s.Problems()
			a.warnEach(probs, "")
			if len(probs) > 0 {
				a.hint("%s skipped; fix by hand (hobbs memory lint lists them)", style.N(len(probs), "memory file", "memory files"))
			}
		}
		defer a.reportProblems()
		return body(cmd, args, s)
	})
}

// withPlaybooks runs body with the playbooks of the existing instance.
func (a *app) withPlaybooks(body func(cmd *cobra.Command, args []string, in instance.Instance, st *playbook.Store) error) runE {
	return a.withExistingInstance(func(cmd *cobra.Command, args []string, in instance.Instance) error {
		c, err := a.config(in)
		if err != nil {
			return err
		}
		tpl, err := fs.ReadFile(hobbs.Templates, "playbook.md")
		if err != nil {
			return errs.Wrap(errs.Failure, err, "read the playbook template")
		}
		st := playbook.Open(in, c.Playbooks.ReviewEveryDays, tpl, a.audit(in))
		st.Warn = func(err error) { a.warn("%v (%s)", err, hintOf(err)) }
		return body(cmd, args, in, st)
	})
}

// withTasks runs body with the task log of the existing instance.
func (a *app) withTasks(body func(cmd *cobra.Command, args []string, log task.Log) error) runE {
	return a.withExistingInstance(func(cmd *cobra.Command, args []string, in instance.Instance) error {
		return body(cmd, args, task.Open(in, a.audit(in)))
	})
}

// withVault runs body with the vault of the existing instance; a failure to
// write its audit entries is a warning.
func (a *app) withVault(body func(cmd *cobra.Command, args []string, v *vault.Vault) error) runE {
	return a.withExistingInstance(func(cmd *cobra.Command, args []string, in instance.Instance) error {
		v := vault.Open(in)
		v.Passphrase = passphrase
		v.AuditFailed = func(err error) { a.warn("audit log not written: %v", err) }
		return body(cmd, args, v)
	})
}

// config loads the instance's config.yaml.
func (a *app) config(in instance.Instance) (*config.Config, error) {
	return config.Load(in.FS(), in.Config())
}

// audit returns the audit logger of in. A line the domain packages cannot
// record (audit.Logger.Record) is a warning: what was done stays done.
func (a *app) audit(in instance.Instance) *audit.Logger {
	l := audit.New(in.FS(), in.AuditLog())
	l.Failed = func(err error) { a.warn("audit log not written: %v", err) }
	return l
}
