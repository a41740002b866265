package image

import (
	"context"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hobbs-agent/hobbs/src/engine"
	"github.com/hobbs-agent/hobbs/src/engine/enginetest"
	"github.com/hobbs-agent/hobbs/src/errs"
)

// fakeEngine is a FAKE docker CLI (a shell script) for Ensure's engine
// calls: it knows the images named in its table (id and inputs label),
// answers `image inspect` for one or several of them as docker does
// (missing ones on stderr, exit 1), logs every call, and "builds" by
// recording the call. The real engine is exercised by tests/e2e.
func fakeEngine(t *testing.T, images map[string][2]string) (engine.CLI, func() []string) {
	t.Helper()
	var table strings.Builder
	for ref, v := range images {
		table.WriteString("\t" + ref + ") id=" + v[0] + " label='" + v[1] + "';;\n")
	}
	return enginetest.Script(t, `[ "$1 $2" = "image inspect" ] || exit 0
shift 2
fmt=
if [ "$1" = --format ]; then fmt=$2; shift 2; fi
rc=0
for ref in "$@"; do
	id= label=
	case $ref in
`+table.String()+`	*) echo "Error: No such image: $ref" >&2; rc=1; continue;;
	esac
	case $fmt in
	'{{.Id}}') echo "$id";;
	'{{.Id}} {{json .Config.Labels}}')
		# docker prints null for an image without labels
		if [ -n "$label" ]; then echo "$id {\"dev.hobbs.inputs\":\"$label\"}"; else echo "$id null"; fi;;
	*) echo "${label:-<no value>}";;
	esac
done
exit $rc
`)
}

// staticELF writes the smallest file checkBinary takes for a static linux
// binary of this architecture: an ELF header with no program headers.
func staticELF(t *testing.T) string {
	t.Helper()
	machine := map[string]uint16{"amd64": 62, "arm64": 183}[runtime.GOARCH]
	if machine == 0 || runtime.GOOS != "linux" {
		t.Skip("static ELF fixture for linux amd64/arm64 only")
	}
	h := make([]byte, 64)
	copy(h, "\x7fELF\x02\x01\x01")
	binary.LittleEndian.PutUint16(h[16:], 2) // ET_EXEC
	binary.LittleEndian.PutUint16(h[18:], machine)
	binary.LittleEndian.PutUint32(h[20:], 1)
	binary.LittleEndian.PutUint16(h[52:], 64) // ehsize
	binary.LittleEndian.PutUint16(h[54:], 56) // phentsize
	binary.LittleEndian.PutUint16(h[58:], 64) // shentsize
	p := filepath.Join(t.TempDir(), "hobbs")
	if err := os.WriteFile(p, h, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestEnsureEngineCalls: an up-to-date image costs one engine call; a
// missing or stale image is built; a missing base is a Missing error.
func TestEnsureEngineCalls(t *testing.T) {
	t.Setenv("DOCKER_HOST", "") // a local engine: its architecture is this process's, asked of no one
	bin := staticELF(t)
	assets := fstest.MapFS{"dist/Dockerfile": {Data: []byte("ARG BASE\nFROM $BASE\n")}}
	current, err := hashInputs(assets, bin, "base:1", "sha256:b1")
	if err != nil {
		t.Fatal(err)
	}
	opts := func(e engine.CLI) BuildOptions {
		return BuildOptions{Engine: e, Assets: assets, Base: "base:1", Tag: "", Binary: bin, Progress: io.Discard}
	}
	cases := []struct {
		name   string
		images map[string][2]string
		built  bool
		calls  int // engine calls before any build
		code   int
	}{
		{"current", map[string][2]string{"base:1": {"sha256:b1", ""}, DefaultImage(): {"sha256:i1", current.hash}}, false, 1, 0},
		{"stale", map[string][2]string{"base:1": {"sha256:b1", ""}, DefaultImage(): {"sha256:i1", "0123"}}, true, 1, 0},
		{"unlabelled", map[string][2]string{"base:1": {"sha256:b1", ""}, DefaultImage(): {"sha256:i1", ""}}, true, 1, 0},
		{"new base", map[string][2]string{"base:1": {"sha256:b2", ""}, DefaultImage(): {"sha256:i1", current.hash}}, true, 1, 0},
		{"no image", map[string][2]string{"base:1": {"sha256:b1", ""}}, true, 3, 0},
		{"no base", map[string][2]string{DefaultImage(): {"sha256:i1", current.hash}}, false, 2, errs.Missing},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, calls := fakeEngine(t, c.images)
			res, err := Ensure(context.Background(), "", opts(e))
			if c.code != 0 {
				if errs.Code(err) != c.code {
					t.Fatalf("err %v (code %d), want code %d", err, errs.Code(err), c.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var before []string
			built := false
			for _, l := range calls() {
				if strings.HasPrefix(l, "build ") || strings.HasPrefix(l, "run --rm") { // the build's claude probe
					built = true
					break
				}
				if !strings.HasPrefix(l, "buildx") {
					before = append(before, l)
				}
			}
			if built != c.built || res.Built != c.built {
				t.Errorf("built %v (result %v), want %v; calls:\n%s", built, res.Built, c.built, strings.Join(calls(), "\n"))
			}
			if len(before) != c.calls {
				t.Errorf("%d engine calls before the build decision, want %d:\n%s", len(before), c.calls, strings.Join(before, "\n"))
			}
			if c.built && !strings.Contains(strings.Join(calls(), "\n"), LabelInputs+"="+res.Inputs) {
				t.Errorf("build not labelled with the inputs hash %s", res.Inputs)
			}
		})
	}
}
