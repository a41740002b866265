package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// setConfig sets top-level keys of the instance's config.yaml.
func (e *env) setConfig(t *testing.T, kv map[string]string) {
	t.Helper()
	p := filepath.Join(e.inst, "config.yaml")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for k, v := range kv {
		re := regexp.MustCompile(`(?m)^` + k + `: .*$`)
		if !re.MatchString(s) {
			t.Fatalf("config.yaml has no %s", k)
		}
		s = re.ReplaceAllString(s, k+`: "`+v+`"`)
	}
	writeFile(t, p, s)
}

// removeImages removes what a test made: names with force (which only
// takes the name away from an image another name still names, such as the
// suite's image), ids without (which the engine refuses while any name or
// container still refers to them).
func removeImages(refs []string) {
	for _, r := range refs {
		if strings.HasPrefix(r, "sha256:") {
			_ = exec.Command("docker", "image", "rm", r).Run()
		} else if r != "" {
			_ = exec.Command("docker", "image", "rm", "-f", r).Run()
		}
	}
}

// imageID is the engine's id of ref, or "" when there is none.
func imageID(ref string) string {
	out, err := exec.Command("docker", "image", "inspect", "--format", "{{.Id}}", ref).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// TestBuildWhatRunUses: hobbs build with no flags builds config.yaml's
// image, which hobbs run then uses without building; a rebuild on another
// base removes the image it replaced, except while a container uses it.
func TestBuildWhatRunUses(t *testing.T) {
	e := newEnv(t)
	e.removeVolume(t)
	img := "hobbs-e2e-" + runID + ":cfg"
	base2 := "hobbs-e2e-" + runID + ":base2"
	var made []string
	base3 := "hobbs-e2e-" + runID + ":base3"
	t.Cleanup(func() { removeImages(append([]string{img, base2, base3}, made...)) })
	// Bases of their own (names of the suite's base): images of their own,
	// not the suite's image under another name.
	docker(t, "tag", baseImage, base2)
	docker(t, "tag", baseImage, base3)
	e.setConfig(t, map[string]string{"image": img, "base_image": base2})

	r := e.hobbs(nil, "build")
	if r.code != 0 || strings.TrimSpace(r.stdout) != img {
		t.Fatalf("hobbs build: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
	}
	first := imageID(img)
	made = append(made, first)
	checkBuildOutput(t, e, r.stderr)
	r = e.hobbs(nil, "run", "--workspace", e.ws, "--name", sessionName(t, "cfg"), "--", "true")
	if r.code != 0 {
		t.Fatalf("hobbs run: exit %d\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "building") || !strings.Contains(r.stderr, img) {
		t.Errorf("run did not use the image build made without building:\n%s", r.stderr)
	}

	// Another base (the same image under another name): new inputs, a new
	// image; the first one goes.
	e.setConfig(t, map[string]string{"base_image": base3})
	r = e.hobbs(nil, "build")
	second := imageID(img)
	made = append(made, second)
	if r.code != 0 || second == first {
		t.Fatalf("rebuild: exit %d, id %s (was %s)\n%s", r.code, second, first, r.stderr)
	}
	if imageID(first) != "" {
		t.Errorf("the replaced image %s is still there:\n%s", first, r.stderr)
	}

	// A container uses the image: the rebuild keeps it and says so.
	ctr := "e2e-" + runID + "-uses-image"
	docker(t, "create", "--name", ctr, img, "true")
	defer exec.Command("docker", "rm", "-f", ctr).Run()
	e.setConfig(t, map[string]string{"base_image": base2})
	r = e.hobbs(nil, "build")
	made = append(made, imageID(img))
	if r.code != 0 || !strings.Contains(r.stderr, "kept the replaced image") {
		t.Fatalf("rebuild with a container on the old image: exit %d\n%s", r.code, r.stderr)
	}
	if imageID(second) == "" {
		t.Errorf("the image a container uses was removed")
	}
}

// TestPrune: on the real engine, hobbs prune finds the images this user's
// hobbs built by their labels (named and unnamed), and leaves the image run
// uses, images Hobbs did not build, and the images another user's hobbs
// built, which it names. It runs with --dry-run: a real prune would remove
// the test user's Hobbs images of other runs on this engine.
func TestPrune(t *testing.T) {
	e := newEnv(t)
	cur := "hobbs-e2e-" + runID + ":prune-cur"
	old := "hobbs-e2e-" + runID + ":prune-old"
	mine := "hobbs-e2e-" + runID + ":prune-mine"
	other := "hobbs-e2e-" + runID + ":prune-other-user"
	var made []string
	t.Cleanup(func() { removeImages(append([]string{cur, old, mine, other}, made...)) })
	// Another user's hobbs image: its labels, another uid.
	b := exec.Command("docker", "build", "-q", "-t", other, "-")
	b.Stdin = strings.NewReader(fmt.Sprintf("FROM %s\nLABEL dev.hobbs.role=image dev.hobbs.user=%d\n", baseImage, testUID+100000))
	if out, err := b.CombinedOutput(); err != nil {
		t.Fatalf("docker build %s: %v\n%s", other, err, out)
	}
	base2 := "hobbs-e2e-" + runID + ":prune-base2"
	docker(t, "tag", baseImage, base2)
	made = append(made, base2)
	e.setConfig(t, map[string]string{"image": cur, "base_image": baseImage})
	if r := e.hobbs(nil, "build"); r.code != 0 {
		t.Fatalf("build %s: %d\n%s", cur, r.code, r.stderr)
	}
	// old, built on base2, is then rebuilt on the base while a container
	// holds it: it stays, without a name.
	if r := e.hobbs(nil, "build", "--tag", old, "--base", base2); r.code != 0 {
		t.Fatalf("build %s: %d\n%s", old, r.code, r.stderr)
	}
	held := imageID(old)
	made = append(made, held)
	ctr := "e2e-" + runID + "-prune"
	docker(t, "create", "--name", ctr, old, "true")
	defer exec.Command("docker", "rm", "-f", ctr).Run()
	if r := e.hobbs(nil, "build", "--tag", old); r.code != 0 || imageID(old) == held {
		t.Fatalf("rebuild %s: %d\n%s", old, r.code, r.stderr)
	}
	docker(t, "tag", baseImage, mine)

	r := e.hobbs(nil, "prune", "--dry-run", "--json")
	if r.code != 0 {
		t.Fatalf("prune: %d\n%s", r.code, r.stderr)
	}
	var res struct {
		Removed []string `json:"removed"`
		Left    []string `json:"left"`
		User    string   `json:"user"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if slices.Contains(res.Removed, other) || !slices.Contains(res.Left, other) || res.User != fmt.Sprint(testUID) {
		t.Errorf("another user's image %s: removed %v, left %v, user %q", other, res.Removed, res.Left, res.User)
	}
	if text := e.hobbs(nil, "prune", "--dry-run"); !strings.Contains(text.stdout, other) || !strings.Contains(text.stdout, "left ") {
		t.Errorf("prune --dry-run does not say it left %s:\n%s", other, text.stdout)
	}
	for _, want := range []string{old, held} {
		if !slices.Contains(res.Removed, want) {
			out, _ := exec.Command("docker", "image", "ls", "--no-trunc", "--filter", "label=dev.hobbs.role=image").CombinedOutput()
			t.Errorf("prune would not remove %s: %v\n%s", want, res.Removed, out)
		}
	}
	for _, keep := range []string{cur, mine, baseImage} {
		if slices.Contains(res.Removed, keep) {
			t.Errorf("prune would remove %s", keep)
		}
	}
	if imageID(old) == "" || imageID(held) == "" {
		t.Errorf("--dry-run removed an image")
	}
}

// checkBuildOutput: what hobbs build printed on the real engine is a line
// per Dockerfile step and the summary, not the builder's output (kept in
// the build log), and no deprecation banner.
func checkBuildOutput(t *testing.T, e *env, stderr string) {
	t.Helper()
	steps := regexp.MustCompile(`(?m)^\[(\d+)/(\d+)\] `).FindAllStringSubmatch(stderr, -1)
	if len(steps) < 5 || steps[0][1] != "1" || steps[len(steps)-1][1] != steps[len(steps)-1][2] {
		t.Errorf("hobbs build: no line per step:\n%s", stderr)
	}
	for _, noise := range []string{"DEPRECATED", "--->", "Running in", "Removing intermediate", "Sending build context"} {
		if strings.Contains(stderr, noise) {
			t.Errorf("hobbs build shows %q:\n%s", noise, stderr)
		}
	}
	m := regexp.MustCompile(`(?m)^built \S+ in \S+ \(\d+ steps; full log: (\S+)\)$`).FindStringSubmatch(stderr)
	if m == nil || m[1] != filepath.Join(e.home, ".local", "state", "hobbs", "logs", "build.log") {
		t.Fatalf("hobbs build: no summary naming the build log:\n%s", stderr)
	}
	if log, err := os.ReadFile(m[1]); err != nil || !strings.Contains(string(log), "Step 1/") && !strings.Contains(string(log), "#1 ") {
		t.Errorf("the build log %s does not hold the builder's output: %v\n%s", m[1], err, log)
	}
}
