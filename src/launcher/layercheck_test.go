package launcher

import "testing"

func TestKernelBefore(t *testing.T) {
	for rel, want := range map[string]bool{"5.10.0-28-amd64": true, "5.11.0": false, "6.18.44-fc": false, "4.19": true, "x": false} {
		if kernelBefore(rel, 5, 11) != want {
			t.Errorf("kernelBefore(%q) != %v", rel, want)
		}
	}
}
