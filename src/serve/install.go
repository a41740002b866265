package serve

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/safefile"
	"github.com/hobbs-agent/hobbs/src/schedule"
)

// UnitName is hobbs serve's systemd user unit.
const UnitName = "hobbs-serve.service"

// InstallOptions configure Install.
type InstallOptions struct {
	Template []byte // dist/hobbs-serve.service
	Binary   string // this hobbs, absolute ("": os.Executable)
	Instance string // the instance root, made explicit in the unit
	Schedule schedule.Options
	Audit    *audit.Logger
	// Root reports whether this process runs as root (nil: its uid is 0);
	// a test sets it.
	Root func() bool
}

// Installed is what Install did.
type Installed struct {
	Unit    string `json:"unit"`
	Changed bool   `json:"changed"`
}

// Install writes hobbs serve's systemd user unit (the template with this
// binary and the instance) and enables and starts it (systemctl --user
// enable --now). Where no systemd user manager answers it writes nothing
// and says how to get one, or how to run hobbs serve otherwise. It refuses
// to run as root.
func Install(o InstallOptions) (Installed, error) {
	if o.Root == nil {
		o.Root = func() bool { return os.Getuid() == 0 }
	}
	if o.Binary == "" {
		bin, err := os.Executable()
		if err != nil {
			return Installed{}, err
		}
		o.Binary = bin
	}
	if o.Root() {
		return Installed{}, errs.Usagef("hobbs serve will not run as root: install it as the user it runs as").
			Advise(RunAsUser)
	}
	dir, ok, err := schedule.UserSystemd(o.Schedule)
	if err != nil {
		return Installed{}, err
	}
	if !ok {
		return Installed{}, errs.Failf("no systemd user manager answers for you: hobbs serve install writes a systemd user unit").
			Advise(NoUserManager, "instance", o.Instance)
	}
	var args []string
	for _, a := range []string{o.Binary, "--instance", o.Instance, "serve"} {
		args = append(args, `"`+strings.NewReplacer(`\`, `\\`, `"`, `\"`, "%", "%%", "$", "$$").Replace(a)+`"`)
	}
	unit := bytes.Replace(o.Template, []byte("@EXEC@"), []byte(strings.Join(args, " ")), 1)
	path := filepath.Join(dir, UnitName)
	old, _ := os.ReadFile(path)
	res := Installed{Unit: path, Changed: !bytes.Equal(old, unit)}
	if res.Changed {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return res, errs.Wrap(errs.Failure, err, "create %s", dir)
		}
		if err := safefile.Write(path, unit, 0o644); err != nil {
			return res, errs.Wrap(errs.Failure, err, "write %s", path)
		}
	}
	ctl := o.Schedule.Systemctl
	if ctl == "" {
		ctl = "systemctl"
	}
	for _, a := range [][]string{{"--user", "daemon-reload"}, {"--user", "enable", "--now", UnitName}} {
		if out, err := exec.Command(ctl, a...).CombinedOutput(); err != nil {
			err = errs.Failf("%s %s: %s", ctl, strings.Join(a, " "), strings.TrimSpace(string(out))).Advise(NoUserManager, "instance", o.Instance)
			o.Audit.Record(audit.Entry{Event: "serve.install", Subject: path, Outcome: "error"}, err)
			return res, err
		}
	}
	o.Audit.Record(audit.Entry{Event: "serve.install", Subject: path, Outcome: "ok", Detail: map[string]any{"changed": res.Changed}}, nil)
	return res, nil
}
