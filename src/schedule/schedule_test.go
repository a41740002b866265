package schedule

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/tooltest"
)

func TestParseCalendarToCron(t *testing.T) {
	for _, c := range []struct{ at, cron string }{
		{"Mon *-*-* 09:00", "0 9 * * 1"},
		{"Mon..Fri *-*-* 08:30:00", "30 8 * * 1,2,3,4,5"},
		{"Sat,Sun 10:15", "15 10 * * 0,6"},
		{"Fri..Mon 07:00", "0 7 * * 0,1,5,6"},
		{"*-*-01 06:00", "0 6 1 * *"},
		{"*-01,07-01 00:00", "0 0 1 1,7 *"},
		{"12-24 18:00", "0 18 24 12 *"},
		{"*-*-* *:00/15", "0,15,30,45 * * * *"},
		{"*-*-* 08..18:00", "0 8,9,10,11,12,13,14,15,16,17,18 * * *"},
		{"*-*-* 00/6:30", "30 0,6,12,18 * * *"},
		{"daily", "0 0 * * *"},
		{"weekly", "0 0 * * 1"},
		{"monthly", "0 0 1 * *"},
		{"hourly", "0 * * * *"},
		{"*-*-* *:*", "* * * * *"},
	} {
		cal, err := parseCalendar(c.at)
		if err != nil {
			t.Errorf("%q: %v", c.at, err)
			continue
		}
		if got := cal.cron(); got != c.cron {
			t.Errorf("%q → %q, want %q", c.at, got, c.cron)
		}
	}
	for _, c := range []struct{ at, want string }{
		{"Mon *-*-01 09:00", "cannot combine weekdays with days of the month"},
		{"2027-*-* 09:00", "a year"},
		{"*-*-* 09:00:30", "seconds"},
		{"*-*-* 09:00 Europe/Paris", "time zone"},
		{"Someday 09:00", "unknown weekday"},
		{"*-*-* 25:00", "hour \"25\""},
		{"*-13-01 00:00", "month \"13\""},
		{"", "expected"},
	} {
		if _, err := parseCalendar(c.at); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want %q", c.at, err, c.want)
		}
	}
}

func TestNext(t *testing.T) {
	from := time.Date(2026, 11, 24, 1, 35, 20, 0, time.UTC) // a Tuesday
	for _, c := range []struct{ at, want string }{
		{"Mon *-*-* 09:00", "2026-11-30T09:00:00Z"},
		{"*-*-* 01:35", "2026-11-25T01:35:00Z"},
		{"*-*-* 01:36", "2026-11-24T01:36:00Z"},
		{"*-*-01 06:00", "2026-12-01T06:00:00Z"},
		{"*-02-29 00:00", "2028-02-29T00:00:00Z"},
		{"*-*-* *:00/15", "2026-11-24T01:45:00Z"},
	} {
		cal, err := parseCalendar(c.at)
		if err != nil {
			t.Fatal(err)
		}
		if got := cal.next(from).Format(time.RFC3339); got != c.want {
			t.Errorf("next(%q) = %s, want %s", c.at, got, c.want)
		}
	}
	cal, _ := parseCalendar("*-02-30 00:00")
	if !cal.next(from).IsZero() {
		t.Error("02-30 came")
	}
}

func TestEvery(t *testing.T) {
	for _, c := range []struct {
		every      time.Duration
		cron, unit string
	}{
		{time.Minute, "* * * * *", "*-*-* *:00/1:00"},
		{15 * time.Minute, "0,15,30,45 * * * *", "*-*-* *:00/15:00"},
		{time.Hour, "0 * * * *", "*-*-* 00/1:00:00"},
		{6 * time.Hour, "0 0,6,12,18 * * *", "*-*-* 00/6:00:00"},
		{24 * time.Hour, "0 0 * * *", "*-*-* 00:00:00"},
		{168 * time.Hour, "0 0 * * 1", "Mon *-*-* 00:00:00"},
	} {
		cal, unit, ok := everyCalendar(c.every)
		if !ok || cal.cron() != c.cron || unit != c.unit {
			t.Errorf("every %s: %v %q %q", c.every, ok, cal.cron(), unit)
		}
	}
	for _, d := range []time.Duration{7 * time.Minute, 90 * time.Minute, 5 * time.Hour, 48 * time.Hour} {
		if _, _, ok := everyCalendar(d); ok {
			t.Errorf("every %s expressible", d)
		}
		_, err := cronSchedule(Spec{Every: d})
		if err == nil || !strings.Contains(err.Error(), "cron cannot run every") || !strings.HasPrefix(errs.AdviceOf(err).Facts["near"], "--every ") {
			t.Errorf("every %s: %v (advice %v)", d, err, errs.AdviceOf(err))
		}
	}
	_, err := cronSchedule(Spec{Every: 90 * time.Minute})
	if a := errs.AdviceOf(err); a.Kind != CronInterval || a.Facts["near"] != "--every 1h or --every 2h" {
		t.Errorf("advice %v", a)
	}
	for _, s := range []Spec{{}, {Every: time.Hour, At: "daily"}, {Every: 30 * time.Second}, {Every: 90 * time.Second}, {At: "daily\n"}} {
		if err := s.Check(); errs.Code(err) != errs.Usage {
			t.Errorf("%+v: %v", s, err)
		}
	}
	if FormatDuration(90*time.Minute) != "1h30m" || FormatDuration(time.Hour) != "1h" || FormatDuration(30*time.Minute) != "30m" {
		t.Error("FormatDuration")
	}
}

func job(spec Spec) Job {
	return Job{Playbook: "weekly-report", Instance: "/home/u/.local/share/hobbs", Binary: "/usr/local/bin/hobbs", Spec: spec}
}

func TestUnits(t *testing.T) {
	j := job(Spec{At: "Mon *-*-* 09:00"})
	j.Instance = "/home/u/my 100% $data"
	svc, tmr, err := Units(j)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(svc), "\n[Service]\nType=oneshot\nExecStart=\"/usr/local/bin/hobbs\" \"--instance\" \"/home/u/my 100%% $$data\" \"playbook\" \"run\" \"weekly-report\" \"--scheduled\"\n") {
		t.Errorf("service:\n%s", svc)
	}
	if !strings.Contains(string(tmr), "\n[Timer]\nOnCalendar=Mon *-*-* 09:00\nPersistent=true\n\n[Install]\nWantedBy=timers.target\n") {
		t.Errorf("timer:\n%s", tmr)
	}
	back, ok := readMeta(tmr)
	if !ok || back != j {
		t.Errorf("meta %+v", back)
	}
	_, tmr, _ = Units(job(Spec{Every: 90 * time.Minute}))
	if !strings.Contains(string(tmr), "\n[Timer]\nOnActiveSec=5400s\nOnUnitActiveSec=5400s\n") {
		t.Errorf("timer:\n%s", tmr)
	}
	_, tmr, _ = Units(job(Spec{Every: 30 * time.Minute}))
	if !strings.Contains(string(tmr), "\nOnCalendar=*-*-* *:00/30:00\nPersistent=true\n") {
		t.Errorf("timer:\n%s", tmr)
	}
}

// TestUnitsVerify checks the generated units with systemd-analyze verify
// where it is installed.
func TestUnitsVerify(t *testing.T) {
	tooltest.Need(t, "systemd-analyze")
	exe, _ := os.Executable()
	for _, spec := range []Spec{{At: "Mon..Fri *-*-* 09:00"}, {Every: 90 * time.Minute}, {Every: time.Hour}} {
		dir := t.TempDir()
		j := job(spec)
		j.Binary, j.Instance = exe, dir
		svc, tmr, err := Units(j)
		if err != nil {
			t.Fatal(err)
		}
		sp, tp := filepath.Join(dir, UnitName(j.Playbook)+".service"), filepath.Join(dir, UnitName(j.Playbook)+".timer")
		os.WriteFile(sp, svc, 0o644)
		os.WriteFile(tp, tmr, 0o644)
		out, err := exec.Command("systemd-analyze", "verify", "--man=no", tp, sp).CombinedOutput()
		if err != nil || strings.Contains(string(out), UnitName(j.Playbook)) {
			t.Errorf("%s: systemd-analyze verify: %v\n%s", spec, err, out)
		}
	}
}

// fakeCrontab installs a crontab command that keeps its table in a file.
func fakeCrontab(t *testing.T, initial string) (cmd, table string) {
	t.Helper()
	dir := t.TempDir()
	table = filepath.Join(dir, "table")
	if initial != "" {
		os.WriteFile(table, []byte(initial), 0o600)
	}
	cmd = filepath.Join(dir, "crontab")
	script := "#!/bin/sh\ncase \"$1\" in\n-l) if [ -f '" + table + "' ]; then cat '" + table + "'; else echo 'no crontab for tester' >&2; exit 1; fi;;\n-) cat > '" + table + "';;\n*) exit 2;;\nesac\n"
	if err := os.WriteFile(cmd, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return cmd, table
}

func TestCron(t *testing.T) {
	mine := "MAILTO=me@example.com\n# my backup\n0 3 * * * /usr/bin/backup --all\n"
	cmd, table := fakeCrontab(t, mine)
	b, err := Detect(Options{Scheduler: "cron", Crontab: cmd, LockPath: filepath.Join(t.TempDir(), "s.lock"),
		Now: func() time.Time { return time.Date(2026, 11, 24, 1, 35, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	res, err := b.Add(job(Spec{At: "Mon *-*-* 09:00"}))
	if err != nil || !res.Changed || res.Next != "2026-11-30T09:00:00Z" {
		t.Fatalf("%+v %v", res, err)
	}
	data, _ := os.ReadFile(table)
	want := mine + "\n" + cronBegin + "\n" +
		`# hobbs-schedule {"playbook":"weekly-report","at":"Mon *-*-* 09:00","instance":"/home/u/.local/share/hobbs","binary":"/usr/local/bin/hobbs"}` + "\n" +
		"0 9 * * 1 '/usr/local/bin/hobbs' '--instance' '/home/u/.local/share/hobbs' 'playbook' 'run' 'weekly-report' '--scheduled'\n" + cronEnd + "\n"
	if string(data) != want {
		t.Fatalf("crontab:\n%s\nwant:\n%s", data, want)
	}
	// Same again: nothing written.
	os.Chmod(table, 0o400)
	if res, err := b.Add(job(Spec{At: "Mon *-*-* 09:00"})); err != nil || res.Changed {
		t.Fatalf("%+v %v", res, err)
	}
	os.Chmod(table, 0o600)
	// Another playbook, then a different spec replaces.
	j2 := job(Spec{Every: 30 * time.Minute})
	j2.Playbook = "inbox"
	if _, err := b.Add(j2); err != nil {
		t.Fatal(err)
	}
	res, err = b.Add(job(Spec{Every: time.Hour}))
	if err != nil || !res.Changed || res.Replaced != "at Mon *-*-* 09:00" {
		t.Fatalf("%+v %v", res, err)
	}
	list, err := b.List()
	if err != nil || len(list) != 2 || list[0].Playbook != "inbox" || list[0].Every != "30m" || list[1].Every != "1h" || list[1].Next != "2026-11-24T02:00:00Z" {
		t.Fatalf("%+v %v", list, err)
	}
	data, _ = os.ReadFile(table)
	if !strings.HasPrefix(string(data), mine) || strings.Count(string(data), "weekly-report'") != 1 || !strings.Contains(string(data), "\n0 * * * * '/usr/local/bin/hobbs'") {
		t.Fatalf("crontab:\n%s", data)
	}
	// Remove both: the block goes, the user's lines stay.
	for _, n := range []string{"weekly-report", "inbox"} {
		if ok, err := b.Remove(n); !ok || err != nil {
			t.Fatal(n, ok, err)
		}
	}
	if ok, err := b.Remove("inbox"); ok || err != nil {
		t.Fatal(ok, err)
	}
	if data, _ = os.ReadFile(table); string(data) != mine {
		t.Fatalf("crontab:\n%q", data)
	}
	// Cron cannot express it: refused, nothing written.
	if _, err := b.Add(job(Spec{Every: 90 * time.Minute})); errs.Code(err) != errs.Usage {
		t.Fatal(err)
	}
	// No crontab yet.
	cmd2, table2 := fakeCrontab(t, "")
	b2, _ := Detect(Options{Scheduler: "cron", Crontab: cmd2, LockPath: filepath.Join(t.TempDir(), "s.lock")})
	if l, err := b2.List(); err != nil || len(l) != 0 {
		t.Fatal(l, err)
	}
	if _, err := b2.Add(job(Spec{At: "daily"})); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(table2); !strings.HasPrefix(string(data), cronBegin+"\n") {
		t.Fatalf("%s", data)
	}
}

func TestCronDamagedBlockLeftAlone(t *testing.T) {
	for _, damaged := range []string{
		"0 1 * * * x\n" + cronBegin + "\n",
		cronEnd + "\n",
		cronBegin + "\nrm -rf /\n" + cronEnd + "\n",
		cronBegin + "\n" + cronEnd + "\n" + cronBegin + "\n" + cronEnd + "\n",
	} {
		cmd, table := fakeCrontab(t, damaged)
		b, _ := Detect(Options{Scheduler: "cron", Crontab: cmd, LockPath: filepath.Join(t.TempDir(), "s.lock")})
		if _, err := b.Add(job(Spec{At: "daily"})); err == nil || !strings.Contains(err.Error(), "the crontab was not changed") {
			t.Errorf("%q: %v", damaged, err)
		}
		if data, _ := os.ReadFile(table); string(data) != damaged {
			t.Errorf("rewritten: %q", data)
		}
	}
}

func TestSystemd(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "systemctl.log")
	sc := filepath.Join(dir, "systemctl")
	os.WriteFile(sc, []byte("#!/bin/sh\necho \"$*\" >> '"+log+"'\n"), 0o755)
	units := filepath.Join(dir, "units")
	b, err := Detect(Options{Scheduler: "systemd", Systemctl: sc, UnitDir: units, LockPath: filepath.Join(dir, "s.lock"),
		Now: func() time.Time { return time.Date(2026, 11, 24, 1, 35, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	res, err := b.Add(job(Spec{At: "Mon *-*-* 09:00"}))
	if err != nil || !res.Changed || res.Next != "2026-11-30T09:00:00Z" {
		t.Fatalf("%+v %v", res, err)
	}
	calls, _ := os.ReadFile(log)
	if !strings.HasPrefix(string(calls), "--user daemon-reload\n--user enable --now hobbs-playbook-weekly-report.timer\n") {
		t.Fatalf("calls:\n%s", calls)
	}
	timer := filepath.Join(units, "hobbs-playbook-weekly-report.timer")
	before, _ := os.ReadFile(timer)
	fi1, _ := os.Stat(timer)
	// Same again: files untouched, the timer enabled again.
	time.Sleep(10 * time.Millisecond)
	if res, err := b.Add(job(Spec{At: "Mon *-*-* 09:00"})); err != nil || res.Changed {
		t.Fatalf("%+v %v", res, err)
	}
	if fi2, _ := os.Stat(timer); !fi2.ModTime().Equal(fi1.ModTime()) {
		t.Fatal("timer rewritten")
	}
	res, err = b.Add(job(Spec{Every: 2 * time.Hour}))
	if err != nil || !res.Changed || res.Replaced != "at Mon *-*-* 09:00" {
		t.Fatalf("%+v %v", res, err)
	}
	after, _ := os.ReadFile(timer)
	if string(after) == string(before) || !strings.Contains(string(after), "OnCalendar=*-*-* 00/2:00:00\n") {
		t.Fatalf("timer:\n%s", after)
	}
	list, err := b.List()
	if err != nil || len(list) != 1 || list[0].Every != "2h" || list[0].Unit != "hobbs-playbook-weekly-report.timer" || list[0].Next != "2026-11-24T02:00:00Z" {
		t.Fatalf("%+v %v", list, err)
	}
	// A timer hobbs did not write is left alone.
	os.WriteFile(filepath.Join(units, "hobbs-playbook-other.timer"), []byte("[Timer]\nOnCalendar=daily\n"), 0o644)
	o := job(Spec{At: "daily"})
	o.Playbook = "other"
	if _, err := b.Add(o); err == nil || !strings.Contains(err.Error(), "not written by hobbs") {
		t.Fatal(err)
	}
	if ok, err := b.Remove("weekly-report"); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if _, err := os.Stat(timer); err == nil {
		t.Fatal("timer left")
	}
	calls, _ = os.ReadFile(log)
	if !strings.HasSuffix(string(calls), "--user disable --now hobbs-playbook-weekly-report.timer\n--user daemon-reload\n") {
		t.Fatalf("calls:\n%s", calls)
	}
	if ok, err := b.Remove("weekly-report"); ok || err != nil {
		t.Fatal(ok, err)
	}
}

func TestDetect(t *testing.T) {
	dir := t.TempDir()
	answer := filepath.Join(dir, "answer")
	sc := filepath.Join(dir, "systemctl")
	os.WriteFile(sc, []byte("#!/bin/sh\ncat '"+answer+"'\nexit 1\n"), 0o755)
	runtime := filepath.Join(dir, "run")
	t.Setenv("XDG_RUNTIME_DIR", runtime)
	o := Options{Systemctl: sc, UnitDir: dir, LockPath: filepath.Join(dir, "l")}
	name := func() string {
		b, err := Detect(o)
		if err != nil {
			t.Fatal(err)
		}
		return b.Name()
	}
	os.WriteFile(answer, []byte("degraded\n"), 0o644)
	if n := name(); n != "cron" {
		t.Errorf("no user manager directory: %s", n)
	}
	os.MkdirAll(filepath.Join(runtime, "systemd"), 0o700)
	if n := name(); n != "systemd" {
		t.Errorf("degraded user manager: %s", n)
	}
	os.WriteFile(answer, []byte("offline\n"), 0o644)
	if n := name(); n != "cron" {
		t.Errorf("offline: %s", n)
	}
	o.Scheduler = "systemd"
	if n := name(); n != "systemd" {
		t.Errorf("forced: %s", n)
	}
	o.Scheduler = "launchd"
	if _, err := Detect(o); errs.Code(err) != errs.Usage {
		t.Errorf("bad scheduler: %v", err)
	}
}

func TestSystemdNextFromSystemctl(t *testing.T) {
	dir := t.TempDir()
	sc := filepath.Join(dir, "systemctl")
	os.WriteFile(sc, []byte("#!/bin/sh\n[ \"$2\" = show ] && echo 'Mon 2026-11-30 09:00:00 UTC'\nexit 0\n"), 0o755)
	b, _ := Detect(Options{Scheduler: "systemd", Systemctl: sc, UnitDir: filepath.Join(dir, "u"), LockPath: filepath.Join(dir, "l")})
	res, err := b.Add(job(Spec{Every: 5 * time.Hour}))
	if err != nil || res.Next != "2026-11-30T09:00:00Z" {
		t.Fatalf("%+v %v", res, err)
	}
}

// Each change of a detected backend, and each refusal, is recorded in the
// audit log; adding the same schedule again, or removing none, is not.
func TestChangesAreAudited(t *testing.T) {
	cmd, _ := fakeCrontab(t, "")
	logPath := filepath.Join(t.TempDir(), "audit.log")
	b, err := Detect(Options{Scheduler: "cron", Crontab: cmd, LockPath: filepath.Join(t.TempDir(), "s.lock"),
		Audit: &audit.Logger{Path: logPath}})
	if err != nil {
		t.Fatal(err)
	}
	b.Add(job(Spec{At: "daily"}))
	b.Add(job(Spec{At: "daily"}))             // the same: no event
	b.Add(job(Spec{Every: time.Hour}))        // replaces
	b.Add(job(Spec{Every: 90 * time.Minute})) // refused by cron
	b.Remove("weekly-report")
	b.Remove("weekly-report") // none left: no event
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var e audit.Entry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		if e.Detail["backend"] != "cron" {
			t.Errorf("backend %v", e.Detail)
		}
		got = append(got, strings.TrimSpace(fmt.Sprintf("%s %s %s %v %v", e.Event, e.Subject, e.Outcome, e.Detail["when"], e.Detail["replaced"])))
	}
	want := []string{
		"schedule.add weekly-report ok at daily",
		"schedule.add weekly-report ok every 1h at daily",
		"schedule.add weekly-report error every 1h30m",
		"schedule.rm weekly-report ok <nil> <nil>",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("events\n%q\nwant\n%q", got, want)
	}
}
