package image

import (
	"strings"
	"testing"
)

func TestPruneResultWriteSummary(t *testing.T) {
	for _, c := range []struct {
		res  PruneResult
		want string
	}{
		{PruneResult{Removed: []string{"hobbs:old", "sha256:bbb"}, Kept: []KeptImage{{"hobbs:used", "container 4f2a is using it"}}},
			"removed hobbs:old\nremoved sha256:bbb\nkept hobbs:used: container 4f2a is using it\n"},
		{PruneResult{Removed: []string{"hobbs:old"}, DryRun: true}, "would remove hobbs:old\n"},
		{PruneResult{Removed: []string{}}, "nothing to remove\n"},
		{PruneResult{Removed: []string{}, Left: []string{"redteam-hobbs:1"}, User: "1000"},
			"nothing to remove\nleft 1 Hobbs image not labelled dev.hobbs.user=1000 (another user's hobbs built them, or a hobbs older than this one): redteam-hobbs:1\n"},
	} {
		var sb strings.Builder
		if err := c.res.WriteSummary(&sb); err != nil || sb.String() != c.want {
			t.Errorf("%+v: %q %v, want %q", c.res, sb.String(), err, c.want)
		}
	}
}
