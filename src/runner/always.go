package runner

import (
	"github.com/hobbs-agent/hobbs/src/approval"
	"github.com/hobbs-agent/hobbs/src/playbook"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// applyAlways adds to the playbook's run: block each host the owner
// answered Always for while the run was held (approval.ApplyDeferred),
// now that the session has ended: playbook.Store.AllowHost renews the
// playbook's approval and audits the change. A host it could not add is a
// warning on Status.
func (h Headless) applyAlways() {
	in := h.Plan.In()
	st := playbook.Open(in, 0, nil, h.Audit)
	d := approval.Dir{Root: safefile.Beneath(in.Approvals())}
	for _, err := range approval.ApplyDeferred(d, h.Plan.Session, func(pb, host, reason string) error {
		_, err := st.AllowHost(pb, host, reason)
		return err
	}) {
		h.Status("hobbs: warning: a host answered Always was not added to the run: block: %v", err)
	}
}
