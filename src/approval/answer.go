package approval

import (
	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/playbook"
	"github.com/hobbs-agent/hobbs/src/policy"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// Owner answers questions for the owner, on the host or from serve's
// channel: the one way an answer is given. Always also writes what the
// session's policy is read from: policy.yaml for a session whose policy is
// the instance's (policy.PolicyFile.Allow, which running proxies reload),
// before the answer is written; for a run with a run: block, the
// playbook's run: block, once the run has ended (ApplyDeferred: the
// playbook is an agent share, and a change to it while a tainted session
// is live would be held for review as that session's). Only a domain is
// added: a bound secret's hosts stay config.yaml's. Each answer is audited
// as egress.answer.
type Owner struct {
	Dir       Dir
	Policy    policy.PolicyFile
	Playbooks *playbook.Store
	Audit     *audit.Logger
}

// OpenOwner is the Owner of instance in: its approvals directory, its
// policy file and playbooks.
func OpenOwner(in instance.Instance, pol policy.PolicyFile, pb *playbook.Store, log *audit.Logger) Owner {
	return Owner{Dir: Dir{Root: safefile.Beneath(in.Approvals())}, Policy: pol, Playbooks: pb, Audit: log}
}

// Answered is what an answer did.
type Answered struct {
	Question Question `json:"question"`
	Answer   Answer   `json:"answer"`
	// Wrote is what Always changed: "policy.yaml" or "playbook NAME".
	Wrote string `json:"wrote,omitempty"`
}

// Answer gives answer a to question id, via where, by whom (see Dir.Give).
func (o Owner) Answer(id, a, via, by string) (Answered, error) {
	var res Answered
	q, ans, err := o.Dir.Give(id, a, via, by, func(q Question) error {
		if a != Always {
			return nil
		}
		if q.Playbook != "" {
			res.Wrote = "playbook " + q.Playbook
			return o.Dir.defer_(q)
		}
		_, _, err := o.Policy.Allow(q.Target())
		res.Wrote = o.Policy.Name
		return err
	})
	res.Question, res.Answer = q, ans
	if q.ID != "" {
		detail := map[string]any{"question": id, "session": q.Session, "answer": a, "via": via, "by": by}
		if res.Wrote != "" {
			detail["wrote"] = res.Wrote
		}
		o.Audit.Record(audit.Entry{Event: "egress.answer", Subject: q.Target(), Detail: detail}, err)
	}
	if err != nil {
		res.Wrote = ""
	}
	return res, err
}
