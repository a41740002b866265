package runner

import (
	"context"
	"io"
	"io/fs"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/engine"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/image"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/launcher"
	"github.com/hobbs-agent/hobbs/src/plan"
	"github.com/hobbs-agent/hobbs/src/playbook"
	"github.com/hobbs-agent/hobbs/src/policy"
	"github.com/hobbs-agent/hobbs/src/task"
	"github.com/hobbs-agent/hobbs/src/vault"
)

// Runner plans and carries out the runs of one instance, for whichever
// process starts them: hobbs run (a session), hobbs playbook run (by hand
// or a schedule's) and hobbs serve (a webhook's). Each run is planned by
// launcher.PlanRun (the policy checked, the host surveyed, plan.New) from the
// instance's effective policy and, for a headless run, the playbook's
// approved allowance, which is carried out as a task by Headless, so every
// caller gets the same checks, plan and record.
type Runner struct {
	Instance instance.Instance
	Config   *config.Config
	Engine   engine.CLI
	// Assets are the binary's embedded files the image is built from;
	// DefaultPolicy the image's default egress policy (dist/policy.yaml).
	Assets        fs.FS
	DefaultPolicy []byte
	Audit         *audit.Logger
	// Remember turns a run's Lessons into memories (nil: none).
	Remember task.Rememberer
	// Words words a piece of advice as the command layer does: a chat
	// turn's reply says what to do about a run that could not start.
	Words func(errs.Advice) string
	// Passphrase unlocks a passphrase-protected vault identity (the run's
	// secrets, a trigger's): vault.Passphrases with the command layer's
	// prompt; nil: vault.FilePassphrase.
	Passphrase vault.PassphraseFunc
	// Status gets progress lines; Stdout and Stderr the run's output.
	Status         func(format string, args ...any)
	Stdout, Stderr io.Writer
}

// Policy is the instance's effective egress policy: the image's default
// and policy.yaml, checked as the proxy will read it.
func (r Runner) Policy() (*policy.Policy, error) {
	if err := launcher.CheckPolicy(r.Instance); err != nil {
		return nil, err
	}
	return r.effective()
}

// effective is the instance's effective egress policy, policy.yaml
// checked already (launcher.PlanRun).
func (r Runner) effective() (*policy.Policy, error) {
	return policy.LoadEffective(r.Instance.FS(), launcher.BuiltinPolicyName, r.DefaultPolicy, r.Instance.Policy())
}

// Plan is the plan of a headless run of kind for grant (trig: a triggered
// run's event). pol is the effective policy the caller has from Policy,
// nil to check and load it here. planOnly: a plan to print, which root may
// see.
func (r Runner) Plan(kind plan.Kind, grant playbook.Allowance, trig *plan.Trigger, pol *policy.Policy, planOnly bool) (*plan.Plan, error) {
	if err := launcher.RefuseRoot(); err != nil && !planOnly {
		return nil, err
	}
	spec := plan.RunSpec{Kind: kind, Image: image.ImageRef(r.Config.Image), Playbook: &grant, Trigger: trig, Policy: pol}
	load := r.effective
	if pol != nil {
		load = nil
	}
	return launcher.PlanRun(r.Instance, r.Config, r.Engine.IsPodman(), "", spec, r.status, load)
}

// Run plans and carries out a headless run of kind for grant as a task
// (taskID: one started already, "" for a new one) and returns how it
// ended; pol as Plan takes it. An error before the run started leaves the
// task to the caller.
func (r Runner) Run(ctx context.Context, kind plan.Kind, grant playbook.Allowance, trig *plan.Trigger, pol *policy.Policy, taskID string) (Finished, error) {
	if _, err := r.Engine.Path(); err != nil {
		return Finished{}, err
	}
	p, err := r.Plan(kind, grant, trig, pol, false)
	if err != nil {
		return Finished{}, err
	}
	h := Headless{Plan: p, Grant: grant, Runtime: r.Runtime(SessionOptions{}), Tasks: task.Open(r.Instance, r.Audit), Remember: r.Remember,
		Status: r.status, Words: r.Words, Task: taskID, Audit: r.Audit}
	return h.RunTask(ctx)
}

func (r Runner) status(format string, args ...any) {
	if r.Status != nil {
		r.Status(format, args...)
	}
}

// CheckTrigger reports whether playbook name may run for a trigger: a
// triggered run is unattended and starts from untrusted input, so the
// playbook must be at stage supervised or autonomous with a run: block
// approved as it is now (hobbs playbook approve), as a scheduled run's
// must. It returns the run's grant; a refusal is audited (playbook.run).
func CheckTrigger(st *playbook.Store, name string, pol *policy.Policy) (playbook.Allowance, error) {
	c, err := st.PrepareRun(name, pol, false, false)
	if err != nil {
		return playbook.Allowance{}, err
	}
	if !c.Spec.Declared {
		return playbook.Allowance{}, st.Refuse(name, "no run: block for a triggered run",
			errs.Usagef("%s has no run: block: a triggered run gets only what an approved run: block grants", name).
				Advise(plan.TriggerNoRun, "playbook", name))
	}
	if c.Unapproved != nil {
		return playbook.Allowance{}, st.Refuse(name, "run: block not approved", c.Unapproved)
	}
	return c.Spec, nil
}

// SessionOptions are hobbs run's flags: what a session is started with
// beyond config.yaml.
type SessionOptions struct {
	Name, Image, Base, Binary, Workspace string
	Command                              []string
	TTY                                  bool
	// Detached: this is the background launcher of hobbs run --detach,
	// or (ReadyFile set) of hobbs run on a terminal, which starts the
	// agent itself once ReadyFile exists.
	Detached  bool
	ReadyFile string
	Stdin     io.Reader
}

// Args are o's flags as hobbs run takes them again, for the background
// launcher (launcher.StartBackground): --workspace, --image, --base, --binary and
// the command.
func (o SessionOptions) Args() []string {
	var args []string
	for _, f := range [][2]string{{"--workspace", o.Workspace}, {"--image", o.Image}, {"--base", o.Base}, {"--binary", o.Binary}} {
		if f[1] != "" {
			args = append(args, f[0], f[1])
		}
	}
	if len(o.Command) > 0 {
		args = append(append(args, "--"), o.Command...)
	}
	return args
}

// CheckName checks the session name o asks for, if any (plan.ValidName).
func (o SessionOptions) CheckName() error {
	if o.Name == "" {
		return nil
	}
	return plan.ValidName(o.Name)
}

// PlanSession is the plan of a session (KindSession) started with o: the
// image config.yaml names unless o does, the instance's effective policy,
// the host surveyed.
func (r Runner) PlanSession(o SessionOptions) (*plan.Plan, error) {
	if err := o.CheckName(); err != nil {
		return nil, err
	}
	if o.Image == "" {
		o.Image = r.Config.Image
	}
	spec := plan.RunSpec{Kind: plan.KindSession, Name: o.Name, Image: image.ImageRef(o.Image), Command: o.Command, TTY: o.TTY}
	return launcher.PlanRun(r.Instance, r.Config, r.Engine.IsPodman(), o.Workspace, spec, r.status, r.effective)
}

// Runtime is what launcher.Execute needs of this process, hobbs run's launcher, to
// carry out a plan started with o: the engine, the streams, the audit log
// and how to make the image current (o's base and binary, else
// config.yaml's). A build on the way says where it starts and how it
// ended, without a line per step (image.BuildOptions.Brief).
func (r Runner) Runtime(o SessionOptions) launcher.Runtime {
	b := image.BuildOptions{Engine: r.Engine, Assets: r.Assets, Base: o.Base, Binary: o.Binary, Progress: r.Stderr, Brief: true}
	b.Defaults(r.Config, true) // the base and the binary; the image is the plan's
	return launcher.Runtime{Engine: r.Engine, Stdin: o.Stdin, Stdout: r.Stdout, Stderr: r.Stderr, Audit: r.Audit, Build: &b,
		Progress: r.status, Words: r.Words, Detached: o.Detached, ReadyFile: o.ReadyFile, Launcher: true, Passphrase: r.Passphrase}
}
