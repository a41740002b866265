package image

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/hobbs-agent/hobbs/src/tooltest"
)

// TestMain keeps what the package's tests write to the state and cache
// directories (build logs, binary digests) out of the user's.
func TestMain(m *testing.M) { os.Exit(tooltest.Main(m, "hobbs-image-test-")) }

// legacyOutput is what the legacy builder prints (docker 20.10 to 28,
// DOCKER_BUILDKIT=0), with the banner newer docker CLIs put first.
const legacyOutput = `DEPRECATED: The legacy builder is deprecated and will be removed in a future release.
            BuildKit is currently disabled; enable it by removing the DOCKER_BUILDKIT=0
            environment-variable.

Sending build context to Docker daemon  13.5MB
Step 1/3 : ARG BASE=hobbs-runtime:latest
Step 2/3 : FROM ${BASE}
 ---> 1b2c3d4e5f60
Step 3/3 : COPY hobbs /usr/local/bin/hobbs
 ---> Running in 0a1b2c3d4e5f
Removing intermediate container 0a1b2c3d4e5f
 ---> 6f5e4d3c2b1a
Successfully built 6f5e4d3c2b1a
Successfully tagged hobbs:test
`

// kitOutput is BuildKit's plain progress (buildx, output not a terminal).
const kitOutput = `#0 building with "default" instance using docker driver

#1 [internal] load build definition from Dockerfile
#1 transferring dockerfile: 2.1kB done
#1 DONE 0.0s

#2 [internal] load metadata for docker.io/library/hobbs-runtime:latest
#2 DONE 0.0s

#3 [1/3] FROM docker.io/library/hobbs-runtime:latest
#3 DONE 0.1s

#4 [2/3] COPY hobbs /usr/local/bin/hobbs
#4 DONE 0.2s

#5 [stage-1 3/3] RUN set -e; grep -q '^dev:' /etc/group
#5 0.301 done
#5 DONE 0.4s

#6 exporting to image
#6 exporting layers 0.1s done
#6 DONE 0.2s
`

// podmanOutput is podman build's.
const podmanOutput = `STEP 1/2: FROM hobbs-runtime:latest
STEP 2/2: COPY hobbs /usr/local/bin/hobbs
--> 1b2c3d4e5f6
COMMIT hobbs:test
Successfully tagged localhost/hobbs:test
`

func runBuildLog(t *testing.T, verbose bool, out string, err error) string {
	t.Helper()
	var w strings.Builder
	b := newBuildLog(&w, verbose)
	// In pieces that split lines, as a pipe delivers them.
	for i := 0; i < len(out); i += 7 {
		if _, err := b.Write([]byte(out[i:min(i+7, len(out))])); err != nil {
			t.Fatal(err)
		}
	}
	b.finish("hobbs:test", err)
	return w.String()
}

func TestBuildLogOneLinePerStep(t *testing.T) {
	for _, c := range []struct {
		name, out string
		want      []string
	}{
		{"legacy", legacyOutput, []string{"[1/3] ARG BASE=hobbs-runtime:latest", "[2/3] FROM ${BASE}", "[3/3] COPY hobbs /usr/local/bin/hobbs"}},
		{"buildkit", kitOutput, []string{"[1/3] FROM docker.io/library/hobbs-runtime:latest", "[2/3] COPY hobbs /usr/local/bin/hobbs",
			"[3/3] RUN set -e; grep -q '^dev:' /etc/group", "exporting to image"}},
		{"podman", podmanOutput, []string{"[1/2] FROM hobbs-runtime:latest", "[2/2] COPY hobbs /usr/local/bin/hobbs"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := runBuildLog(t, false, c.out, nil)
			lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
			last := lines[len(lines)-1]
			if strings.Join(lines[:len(lines)-1], "\n") != strings.Join(c.want, "\n") {
				t.Errorf("steps:\n%s\nwant:\n%s", got, strings.Join(c.want, "\n"))
			}
			wantLast := "built hobbs:test in "
			if !strings.HasPrefix(last, wantLast) || !strings.Contains(last, fmt.Sprintf("(%d steps; full log: %s)", len(c.want), BuildLogPath())) {
				t.Errorf("last line %q", last)
			}
			log, err := os.ReadFile(BuildLogPath())
			if err != nil || string(log) != c.out {
				t.Errorf("the build log is not the whole output: %v\n%s", err, log)
			}
		})
	}
}

// Brief, off a terminal (a build on the way to hobbs run): the end line
// only, with the steps counted.
func TestBuildLogBrief(t *testing.T) {
	var w strings.Builder
	b := newBuildLog(&w, false)
	b.brief = true
	if _, err := b.Write([]byte(legacyOutput)); err != nil {
		t.Fatal(err)
	}
	b.finish("hobbs:test", nil)
	if got := w.String(); strings.Count(got, "\n") != 1 || !strings.HasPrefix(got, "built hobbs:test in ") || !strings.Contains(got, "(3 steps; full log: ") {
		t.Errorf("brief output:\n%s", got)
	}
}

// --verbose shows the output as it is, but for the banner.
func TestBuildLogVerbose(t *testing.T) {
	got := runBuildLog(t, true, legacyOutput, nil)
	if strings.Contains(got, "DEPRECATED") || strings.Contains(got, "environment-variable") {
		t.Errorf("the banner is shown:\n%s", got)
	}
	for _, want := range []string{"Step 3/3 : COPY", " ---> Running in 0a1b2c3d4e5f", "Successfully tagged hobbs:test"} {
		if !strings.Contains(got, want) {
			t.Errorf("verbose output lacks %q:\n%s", want, got)
		}
	}
}

// A failed build shows its last lines and where the whole log is.
func TestBuildLogFailure(t *testing.T) {
	out := "Step 1/2 : FROM x\nStep 2/2 : RUN false\n ---> Running in abc\nThe command '/bin/sh -c false' returned a non-zero code: 1\n"
	got := runBuildLog(t, false, out, errors.New("docker build failed"))
	if !strings.Contains(got, "the build's last lines (full log: "+BuildLogPath()+"):\n") ||
		!strings.Contains(got, "  The command '/bin/sh -c false' returned a non-zero code: 1\n") || strings.Contains(got, "built ") {
		t.Errorf("failure output:\n%s", got)
	}
}
