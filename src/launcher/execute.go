package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/engine"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/image"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/plan"
	"github.com/hobbs-agent/hobbs/src/policy"
	"github.com/hobbs-agent/hobbs/src/provenance"
	"github.com/hobbs-agent/hobbs/src/vault"
)

// PlanRun prepares the host for the run spec describes and returns its
// plan: the workspace (workspace, else config.yaml's; ~ expanded) made
// when missing, the instance's policy checked as the proxy will read it
// (the one check of a run), and the host surveyed (plan.Survey: every bind
// source checked, missing share directories made). The spec's Host
// is filled in here; its Name, when empty, is a fresh one. load gives the
// spec's policy (the instance's effective one) once policy.yaml has passed
// its check; nil when the caller has checked policy.yaml itself
// (runner.Runner.Policy, which is this check and load) and set the spec's
// policy: the run then checks nothing again.
func PlanRun(in instance.Instance, cfg *config.Config, podman bool, workspace string, spec plan.RunSpec, progress func(string, ...any),
	load func() (*policy.Policy, error)) (*plan.Plan, error) {
	if spec.Name == "" {
		spec.Name = NewName()
	}
	if err := plan.ValidName(spec.Name); err != nil {
		return nil, err
	}
	if workspace == "" {
		workspace = cfg.Workspace
	}
	ws, err := config.ExpandHome(workspace)
	if err != nil {
		return nil, errs.Wrap(errs.Usage, err, "workspace %q", workspace)
	}
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return nil, errs.Wrap(errs.Failure, err, "create workspace")
	}
	if load == nil && spec.Policy == nil {
		return nil, errs.Failf("internal: a run planned without its policy")
	}
	if load != nil {
		if err := CheckPolicy(in); err != nil {
			return nil, err
		}
		pol, err := load()
		if err != nil {
			return nil, err
		}
		spec.Policy = pol
	}
	h, err := plan.Survey(in, cfg, podman, ws, os.Getuid(), os.Getgid(), progress)
	if err != nil {
		return nil, err
	}
	h.RunVolume = RunVolume(spec.Name)
	spec.Host = h
	return plan.New(cfg, spec)
}

// BuiltinPolicyName names the image's default policy in messages.
const BuiltinPolicyName = "built-in dist/policy.yaml"

// CheckPolicy parses the instance's policy.yaml as the session's proxy will:
// an error (file:line) is the user's to fix, before a session starts.
func CheckPolicy(in instance.Instance) error {
	if _, err := in.FS().Stat(in.Policy()); err != nil {
		return errs.Missingf("the instance's policy: %v", err).Advise(NoPolicy)
	}
	if _, err := policy.ParseFile(in.Policy()); err != nil {
		return (&errs.Error{Code: errs.Code(err), Msg: "the egress policy is invalid; the proxy would not start: " + err.Error()}).
			Advise(BadPolicy, "path", in.Policy())
	}
	return nil
}

// Runtime is what Execute needs beyond the plan: what only the launcher's
// process has (the engine, its streams) and how the session is followed.
type Runtime struct {
	Engine         engine.CLI
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Progress       func(format string, args ...any)
	// Words words the launcher's notices (kinds.go) for Progress.
	Words func(errs.Advice) string
	// Audit, when set, gets the session's start (once its image is ready)
	// and end.
	Audit *audit.Logger
	// Build, when set, is how the plan's image is made current while the
	// session's objects are created (Ensure: checked, built or pulled).
	Build *image.BuildOptions
	// Detached and ReadyFile: see Session.
	Detached  bool
	ReadyFile string
	// DiskFree measures the free space of the filesystem holding a path
	// for the plan's DiskWatch; nil: statfs.
	DiskFree func(path string) (int64, error)
	// Passphrase unlocks a passphrase-protected vault identity for the
	// run's secrets (vault.Passphrases); nil: vault.FilePassphrase.
	Passphrase vault.PassphraseFunc
	// Ended, when set, gets the session's provenance record once its end
	// decided the session's taint (not called when the end could not be
	// recorded).
	Ended func(provenance.Session)
	// Launcher: this process is the session's own launcher (hobbs run),
	// which ends with the session; Execute tunes its garbage collector
	// for that (launcherGC).
	Launcher bool
}

// launcherGC makes a process that runs one session and exits collect
// garbage less often: its heap is a few megabytes allocated in bursts at
// the session's start and end (the provenance record's listings), which
// Go's default (GOGC=100) collects several times while the containers are
// created, on the CPU they need. GOGC set in the environment wins. A
// process that carries out many runs (hobbs serve) keeps the default.
func launcherGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
}

// Execute carries out plan p: it decrypts the values of the secrets the
// plan names (nothing else), runs the session to its end and returns the
// agent command's exit code: 124 when the plan's time limit stopped it,
// ExitStopped when hobbs stop did.
func Execute(ctx context.Context, p *plan.Plan, rt Runtime) (int, error) {
	if rt.Launcher {
		launcherGC()
	}
	code, _, err := execute(ctx, p, rt, false)
	return code, err
}

// ExecuteMasked is Execute that also returns a function that replaces
// every value of the run's secrets in a text by the secret's name
// (policy.NameMask): what a chat turn's reply passes through.
func ExecuteMasked(ctx context.Context, p *plan.Plan, rt Runtime) (int, func(string) string, error) {
	return execute(ctx, p, rt, true)
}

// execute is Execute, with mask when masked (ExecuteMasked).
func execute(ctx context.Context, p *plan.Plan, rt Runtime, masked bool) (int, func(string) string, error) {
	env, bound, err := values(p, rt.Passphrase)
	if err != nil {
		return 0, nil, err
	}
	defer clearValues(env, bound)
	var mask func(string) string
	if masked {
		mask = valueMask(env, bound)
	}
	code, err := run(ctx, p, rt, env, bound)
	return code, mask, err
}

// valueMask is policy.NameMask of the run's values.
func valueMask(env []string, bound []*policy.Secret) func(string) string {
	values := map[string]string{}
	for _, kv := range env {
		if n, v, ok := strings.Cut(kv, "="); ok {
			values[n] = v
		}
	}
	for _, b := range bound {
		values[b.Name] = b.Value
	}
	return policy.NameMask(values)
}

// run carries out p with the secrets' values env and bindings: the
// session (Session.Run) within the plan's time limit and disk watch, the
// image made current meanwhile (rt.Build), its start and end audited.
func run(ctx context.Context, p *plan.Plan, rt Runtime, env []string, bound []*policy.Secret) (int, error) {
	s := &Session{Engine: rt.Engine, Instance: p.In(), Name: p.Session, Detached: rt.Detached, ReadyFile: rt.ReadyFile,
		Secrets: env, Bound: bound, Stdin: rt.Stdin, Stdout: rt.Stdout, Stderr: rt.Stderr, Progress: rt.Progress, Words: rt.Words,
		Neutralise: func(when string) { neutralise(p, rt, when) }, Provenance: provenance.New(p.In().FS(), rt.Audit), Ended: rt.Ended, plan: p}
	if rt.Detached {
		s.Stdin = nil
	}
	started := false
	s.Prepare = func(ctx context.Context) (bool, error) {
		changed := false
		if rt.Build != nil {
			engine.Tracef("run: ensure image")
			ref := p.Image
			if ref == image.DefaultImage() {
				ref = "" // a release's published image, or this build's
			}
			img, err := image.Ensure(ctx, ref, *rt.Build)
			if err != nil {
				return false, err
			}
			if img.Image != p.Image {
				return false, errs.Failf("internal: the image is %s, not %s", img.Image, p.Image)
			}
			if img.NoClaude && startsClaude(p) {
				return false, image.NoClaudeCode(img.Image)
			}
			engine.Tracef("run: image ready")
			changed = img.Built || img.Pulled
			if rt.Progress != nil {
				rt.Progress("session %s: %s in %s", p.Session, img.Image, p.Workspace)
			}
		}
		started = true
		logStart(p, rt.Audit)
		return changed, nil
	}
	if p.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.Timeout)
		defer cancel()
	}
	ctx, diskFull := watchPlanDisk(ctx, p, rt)
	code, err := s.Run(ctx)
	if p.Timeout > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		code, err = errs.Timeout, &errs.Error{Code: errs.Timeout, Msg: fmt.Sprintf("session %s stopped at its time limit (%v)", p.Session, p.Timeout)}
	}
	if full := diskFull(); full != nil {
		code, err = errs.Failure, diskFullError(p.Session, full)
	}
	engine.Tracef("run: session returned")
	if started && rt.Audit != nil {
		out := "ok"
		switch {
		case errs.Code(err) == ExitStopped:
			out, code = "stopped", ExitStopped
		case err != nil:
			out = "error"
		}
		_ = rt.Audit.Log(audit.Entry{Event: "session.end", Subject: p.Session, Outcome: out, Detail: map[string]any{"exit": code}})
	}
	return code, err
}

// startsClaude reports whether p's agent command is Claude Code: a
// session's default command, a chat turn's and a headless run's, or
// claude named in hobbs run -- COMMAND.
func startsClaude(p *plan.Plan) bool {
	c := p.Claude.Command
	return len(c) > 0 && path.Base(c[0]) == "claude"
}

// watchPlanDisk watches the plan's DiskWatch while the session runs: the
// context it returns is cancelled, which ends the session as an interrupt
// does (the agent gets SIGTERM, then the containers go), when a
// filesystem the agent writes has less free space than the run keeps.
// full reports, once the session has ended, whether that stopped it.
func watchPlanDisk(ctx context.Context, p *plan.Plan, rt Runtime) (context.Context, func() *DiskFullError) {
	if p.DiskWatch.MinFree <= 0 {
		return ctx, func() *DiskFullError { return nil }
	}
	free := rt.DiskFree
	if free == nil {
		free = freeSpace
	}
	wctx, stop := context.WithCancelCause(ctx)
	done := make(chan struct{})
	var hit *DiskFullError
	go func() {
		defer close(done)
		if err := watchDisk(wctx, p.DiskWatch, free, diskWatchInterval); err != nil {
			hit, _ = err.(*DiskFullError)
			if rt.Progress != nil {
				rt.Progress("hobbs: stopping session %s: %v", p.Session, err)
			}
			stop(err)
		}
	}()
	return wctx, func() *DiskFullError {
		stop(nil) // the session has ended: the watch ends too
		<-done
		return hit
	}
}

// neutralise moves what host tools act on (a .git, an .envrc:
// instance.HostTrusted) out of the instance's shares into its quarantine,
// saying what it moved (and audited by instance.Neutralise): before the
// agent starts (what an earlier session left, a crashed launcher's too) and
// once its container is gone (Session.Neutralise). A share it could not
// walk whole is a warning; the session goes on.
func neutralise(p *plan.Plan, rt Runtime, when string) {
	moved, err := p.In().Neutralise(p.Session+"-"+when, time.Now(), rt.Audit)
	say := rt.Progress
	if say == nil {
		say = func(string, ...any) {}
	}
	if when == "end" {
		// What the session wrote is in its layers until they merge.
		for _, lm := range p.Layers {
			m, lerr := p.In().NeutraliseLayer(filepath.Join(p.Instance, filepath.FromSlash(lm.Dir), "upper"), lm.Share,
				p.Session+"-"+when, time.Now(), rt.Audit)
			moved, err = append(moved, m...), errors.Join(err, lerr)
		}
	}
	for _, m := range moved {
		say("hobbs: %s", word(rt.Words, MovedOut, "from", m.From, "to", m.To))
	}
	if err != nil {
		say("hobbs: warning: %s", word(rt.Words, SharesUnchecked, "err", err.Error()))
	}
}

// logStart audits the session's start: what it runs and the names of the
// secrets it gets.
func logStart(p *plan.Plan, log *audit.Logger) {
	if log == nil {
		return
	}
	env, bound := []string{}, []string{}
	for _, e := range p.Env {
		env = append(env, e.Name)
	}
	for _, b := range p.Secrets {
		bound = append(bound, b.Name)
	}
	d := map[string]any{"image": p.Image, "workspace": p.Workspace, "kind": string(p.Kind), "env": env, "secrets": bound}
	if p.Playbook != "" {
		d["playbook"] = p.Playbook
	}
	_ = log.Log(audit.Entry{Event: "session.start", Subject: p.Session, Outcome: "ok", Detail: d})
}

// values decrypts the values of the plan's env: variables and bound
// secrets (their bindings were checked when the plan was made): a secret
// for the proxy of each binding, two of an aws-sigv4 one (the access key
// id and the secret access key).
func values(p *plan.Plan, pass vault.PassphraseFunc) (env []string, bound []*policy.Secret, err error) {
	mapping := make([][2]string, 0, len(p.Env)+len(p.Secrets))
	maps := make([]vault.Mapped, 0, cap(mapping))
	for _, e := range p.Env {
		mapping = append(mapping, [2]string{e.Name, e.Vault})
		maps = append(maps, vault.Mapped{Var: e.Name, Entry: e.Vault, Key: "env." + e.Name})
	}
	for _, b := range p.Secrets {
		mapping = append(mapping, [2]string{b.Name, b.Vault})
		maps = append(maps, vault.Mapped{Var: b.Name, Entry: b.Vault, Key: "secrets." + b.Name + ".vault"})
	}
	// A missing entry is named with its fix before a passphrase is asked
	// for or anything is decrypted.
	if err := vault.CheckMapped(p.In(), maps); err != nil {
		return nil, nil, err
	}
	all, err := vault.SessionEnv(p.In(), mapping, pass)
	if err != nil {
		return nil, nil, err
	}
	env = all[:len(p.Env)]
	for i, kv := range all[len(p.Env):] {
		_, value, _ := strings.Cut(kv, "=")
		secrets, err := proxySecrets(p.Secrets[i], value)
		if err != nil {
			return nil, nil, err
		}
		bound = append(bound, secrets...)
	}
	return env, bound, nil
}

// proxySecrets are the proxy's secrets of binding b with its value: b
// itself, or for an aws-sigv4 binding one of each part (the access key id,
// placed like any header-bound secret, and the secret access key, which
// the proxy only signs with).
func proxySecrets(b policy.Binding, value string) ([]*policy.Secret, error) {
	if b.Kind != policy.KindAWSSigV4 {
		return []*policy.Secret{{Binding: b, Value: value}}, nil
	}
	id, secret, ok := awsKeyPair(value)
	if !ok {
		return nil, errs.Usagef("vault entry %q (bound as %s, kind aws-sigv4) does not hold an AWS access key id and secret access key on two lines", b.Vault, b.Name).
			Advise(AWSKeyPair, "vault", b.Vault)
	}
	keyID, secretKey := b, b
	keyID.In = nil
	secretKey.Name, secretKey.In, secretKey.Requests = policy.AWSSecretKeyVar, nil, nil
	return []*policy.Secret{{Binding: keyID, Part: policy.PartAWSKeyID, Value: id},
		{Binding: secretKey, Part: policy.PartAWSSecretKey, Value: secret}}, nil
}

// awsKeyPair reads an aws-sigv4 vault entry: the access key id and the
// secret access key, each on its own line (blank lines and spaces around
// them ignored).
func awsKeyPair(v string) (id, secret string, ok bool) {
	var f []string
	for _, l := range strings.Split(v, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			f = append(f, l)
		}
	}
	if len(f) != 2 || strings.ContainsAny(f[0]+f[1], " \t") {
		return "", "", false
	}
	return f[0], f[1], true
}

// clearValues drops the references to the secrets' values once the session
// has ended (Go strings cannot be wiped; this keeps them from living on in
// what the caller holds).
func clearValues(env []string, bound []*policy.Secret) {
	for i := range env {
		env[i] = ""
	}
	for _, b := range bound {
		b.Value = ""
	}
}
