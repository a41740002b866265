package launcher

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hobbs-agent/hobbs/src/engine"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/plan"
)

// The sessions of an instance as the engine has them: every container,
// network and volume labelled with the instance and a session (labels.go),
// listed (hobbs ps), removed (hobbs stop, and a run's reaping of crashed
// sessions' leftovers: ReapOrphans) and their output shown (hobbs logs).
// This file uses only the labels and the session notes (records.go), never
// the code that runs a session.

// SessionInfo is one session as `hobbs ps` shows it.
type SessionInfo struct {
	Name       string    `json:"name"`
	Status     string    `json:"status"` // the agent container's state, or "partial" when only leftovers exist
	Image      string    `json:"image,omitempty"`
	Workspace  string    `json:"workspace,omitempty"`
	Created    time.Time `json:"created"`
	Owner      string    `json:"owner"`
	OwnerAlive bool      `json:"owner_alive"`
	Containers []string  `json:"containers"`
	Networks   []string  `json:"networks"`
	Volumes    []string  `json:"volumes"`
}

// Orphan reports whether the hobbs process that started the session is
// gone.
func (s SessionInfo) Orphan() bool { return !s.OwnerAlive }

type inspected struct {
	Name    string
	Created time.Time
	Config  struct {
		Image  string
		Labels map[string]string
	}
	State struct{ Status string }
	// networks
	Labels map[string]string
}

// List returns the sessions of instance in (every labelled container,
// network and socket volume), sorted by name.
func List(ctx context.Context, e engine.CLI, in instance.Instance) ([]SessionInfo, error) {
	f := "label=" + plan.LabelInstance + "=" + plan.InstanceID(in)
	byName := map[string]*SessionInfo{}
	get := func(name, owner string) *SessionInfo {
		s := byName[name]
		if s == nil {
			s = &SessionInfo{Name: name, Status: "partial", Owner: owner, OwnerAlive: OwnerAlive(owner),
				Containers: []string{}, Networks: []string{}, Volumes: []string{}}
			byName[name] = s
		}
		return s
	}
	cs, err := listInspected(ctx, e, "container", f, "label="+plan.LabelSession)
	if err != nil {
		return nil, err
	}
	for _, c := range cs {
		l := c.Config.Labels
		s := get(l[plan.LabelSession], l[plan.LabelOwner])
		s.Containers = append(s.Containers, strings.TrimPrefix(c.Name, "/"))
		if l[plan.LabelRole] == plan.RoleAgent {
			s.Status, s.Image, s.Workspace, s.Created = c.State.Status, c.Config.Image, l[plan.LabelWork], c.Created
		}
	}
	ns, err := listInspected(ctx, e, "network", f, "label="+plan.LabelSession)
	if err != nil {
		return nil, err
	}
	for _, n := range ns {
		s := get(n.Labels[plan.LabelSession], n.Labels[plan.LabelOwner])
		s.Networks = append(s.Networks, n.Name)
		if s.Created.IsZero() || n.Created.Before(s.Created) && s.Status == "partial" {
			s.Created = n.Created
		}
	}
	vs, err := listInspected(ctx, e, "volume", f, "label="+plan.LabelSession)
	if err != nil {
		return nil, err
	}
	for _, v := range vs {
		s := get(v.Labels[plan.LabelSession], v.Labels[plan.LabelOwner])
		s.Volumes = append(s.Volumes, v.Name)
	}
	out := make([]SessionInfo, 0, len(byName))
	for _, k := range slices.Sorted(maps.Keys(byName)) {
		s := byName[k]
		sort.Strings(s.Containers)
		sort.Strings(s.Networks)
		sort.Strings(s.Volumes)
		out = append(out, *s)
	}
	return out, nil
}

// listInspected lists the objects of kind (container, network or volume)
// that match every filter and returns what inspecting them tells.
func listInspected(ctx context.Context, e engine.CLI, kind string, filters ...string) ([]inspected, error) {
	ls, inspect := []string{kind, "ls", "-q"}, []string{kind, "inspect"}
	if kind == "container" {
		ls, inspect = []string{"ps", "-aq"}, []string{"inspect"}
	}
	for _, f := range filters {
		ls = append(ls, "--filter", f)
	}
	ids, err := e.Output(ctx, ls...)
	if err != nil || ids == "" {
		return nil, err
	}
	out, err := e.Output(ctx, append(inspect, strings.Fields(ids)...)...)
	if err != nil && !engine.IsNotFound(err) {
		return nil, err
	}
	var all []inspected
	if err := json.Unmarshal([]byte(out), &all); err != nil && out != "" {
		return nil, errs.Wrap(errs.Failure, err, "parse %s %s inspect", e.Bin, kind)
	}
	return all, nil
}

// Stop removes session name of instance in; ok=false when there is none.
func Stop(ctx context.Context, e engine.CLI, in instance.Instance, name string) (bool, error) {
	all, err := List(ctx, e, in)
	if err != nil {
		return false, err
	}
	for _, s := range all {
		if s.Name == name {
			markRunning(in, s)
			if err := removeSession(ctx, e, name); err != nil {
				return true, err
			}
			forgetDead(in, []string{name})
			return true, nil
		}
	}
	return false, nil
}

// StopAll removes every session of instance in and returns their names.
func StopAll(ctx context.Context, e engine.CLI, in instance.Instance) ([]string, error) {
	return stopWhere(ctx, e, in, func(SessionInfo) bool { return true })
}

// ReapOrphans removes the sessions of in whose hobbs process is gone.
func ReapOrphans(ctx context.Context, e engine.CLI, in instance.Instance) ([]string, error) {
	return stopWhere(ctx, e, in, SessionInfo.Orphan)
}

func stopWhere(ctx context.Context, e engine.CLI, in instance.Instance, pick func(SessionInfo) bool) ([]string, error) {
	all, err := List(ctx, e, in)
	if err != nil {
		return nil, err
	}
	var done []string
	for _, s := range all {
		if !pick(s) {
			continue
		}
		markRunning(in, s)
		if err := removeSession(ctx, e, s.Name); err != nil {
			forgetDead(in, done)
			return done, err
		}
		done = append(done, s.Name)
	}
	forgetDead(in, done)
	return done, nil
}

// proxyStopTime is how long (seconds) the engine waits for a session's
// proxy to exit after SIGTERM before it kills it, at the session's end and
// when the session is removed. The proxy is stopped only once the
// agent is gone, so its tunnels have no client left; it is run with a short
// --grace (ProxyArgs) and exits well within this.
const proxyStopTime = 5

// removeSession removes every container, network and volume labelled as
// session n.
func removeSession(ctx context.Context, e engine.CLI, n string) error {
	f := "label=" + plan.LabelSession + "=" + n
	ids, err := e.Output(ctx, "ps", "-aq", "--filter", f)
	if err != nil {
		return err
	}
	if ids != "" {
		// Stopped first (SIGTERM): the proxy writes its last audit lines.
		stop := append([]string{"stop", "--time", strconv.Itoa(proxyStopTime)}, strings.Fields(ids)...)
		if _, err := e.Output(ctx, stop...); err != nil && !engine.IsNotFound(err) {
			return err
		}
		if _, err := e.Output(ctx, append([]string{"rm", "-f"}, strings.Fields(ids)...)...); err != nil && !engine.IsNotFound(err) {
			// The engine may be removing the agent itself (--rm, once
			// stopped) and refuses a second removal meanwhile: wait until
			// the containers are gone, or give the refusal.
			if !containersGone(ctx, e, f) {
				return err
			}
		}
	}
	if err := removeListed(ctx, e, "network", f); err != nil {
		return err
	}
	return removeListed(ctx, e, "volume", f)
}

// removeListed removes every object of kind (network or volume) that
// matches filter f.
func removeListed(ctx context.Context, e engine.CLI, kind, f string) error {
	ids, err := e.Output(ctx, kind, "ls", "-q", "--filter", f)
	if err != nil || ids == "" {
		return err
	}
	if _, err := e.Output(ctx, append([]string{kind, "rm"}, strings.Fields(ids)...)...); err != nil && !engine.IsNotFound(err) {
		return err
	}
	return nil
}

// containersGone waits (10 s at most) until no container matches filter f.
func containersGone(ctx context.Context, e engine.CLI, f string) bool {
	deadline := time.Now().Add(10 * time.Second)
	for {
		left, err := e.Output(ctx, "ps", "-aq", "--filter", f)
		if err == nil && left == "" {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// markRunning leaves a stop mark (records.go) for session s when its
// launcher still runs, so that launcher reports a stop, not a failure.
func markRunning(in instance.Instance, s SessionInfo) {
	if s.Owner != "" && s.OwnerAlive {
		_ = markStopped(in, s.Name, s.Owner)
	}
}

// SessionColumns is the header of hobbs ps, the columns of Row.
const SessionColumns = "NAME\tSTATUS\tCREATED\tWORKSPACE"

// Row is the session's line of hobbs ps, tab-separated: name, status
// (marked orphan when its hobbs process is gone), creation in local time,
// workspace ("-" when unknown).
func (s SessionInfo) Row() string {
	st := s.Status
	if s.Orphan() {
		st += " (orphan)"
	}
	created := "-"
	if !s.Created.IsZero() {
		created = s.Created.Local().Format(time.DateTime)
	}
	ws := s.Workspace
	if strings.TrimSpace(ws) == "" {
		ws = "-"
	}
	return fmt.Sprintf("%s\t%s\t%s\t%s", s.Name, st, created, ws)
}

// LogsArgs is the engine command line that shows session name's output:
// its agent container's, or with proxy its proxy's; follow keeps
// following, a tail other than "" shows only that many last lines.
func LogsArgs(name string, proxy, follow bool, tail string) []string {
	args := []string{"logs"}
	if follow {
		args = append(args, "--follow")
	}
	if tail != "" {
		args = append(args, "--tail", tail)
	}
	if proxy {
		name = plan.ProxyName(name)
	}
	return append(args, name)
}

// FindRunning fails unless list has a session name with containers.
func FindRunning(list []SessionInfo, name string) error {
	for _, s := range list {
		if s.Name == name && len(s.Containers) > 0 {
			return nil
		}
	}
	return errs.Failf("no running session %q in this instance", name).Advise(NoRunningSession)
}

// EndedOutput is what the launcher of session name printed, kept after
// the session ended (SessionLog: sessions started with hobbs run
// --detach), its last tail lines when tail is a number; ok is false when
// there is none.
func EndedOutput(in instance.Instance, name, tail string) (text string, ok bool) {
	out, err := os.ReadFile(SessionLog(in, name))
	if err != nil {
		return "", false
	}
	text = string(out)
	if n, err := strconv.Atoi(tail); err == nil && n >= 0 {
		text = LastLines(text, n)
	}
	return text, true
}

// LastLines is the last n lines of s.
func LastLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "")
}
