package egress

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/hobbs-agent/hobbs/src/doctor"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/policy"
)

// DoctorPolicy is doctor's policy check: it validates the instance's
// policy.yaml, the file the proxy loads after the image's default.
func DoctorPolicy(_ context.Context, env *doctor.Env) []doctor.Result {
	path := env.Instance.Policy()
	data, err := env.Instance.FS().ReadFile(path, instance.MaxTextFile)
	if errors.Is(err, fs.ErrNotExist) {
		return []doctor.Result{{Status: doctor.OK, Message: "no policy.yaml: the default policy applies"}}
	}
	if err != nil {
		return []doctor.Result{{Status: doctor.Fail, Message: err.Error()}}
	}
	p, err := policy.Parse(path, data)
	if err != nil {
		return []doctor.Result{{Status: doctor.Fail,
			Message: strings.ReplaceAll(err.Error(), "\n", "; "),
			Advice:  errs.NewAdvice(PolicyInvalid)}}
	}
	return []doctor.Result{{Status: doctor.OK, Message: fmt.Sprintf("%s: valid (%s)", env.Instance.Rel(path), p.Summary())}}
}
