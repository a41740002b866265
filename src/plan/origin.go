package plan

import "github.com/hobbs-agent/hobbs/src/provenance"

// A run's origin is what the provenance record of its session begins
// with (src/provenance decides from it, and from the hosts the session
// read, whether what it changes in the shares waits for review).

// Origin is who starts the plan's run.
func (p *Plan) Origin() provenance.Origin {
	switch p.Kind {
	case KindPlaybook:
		return provenance.Origin{Kind: provenance.OriginCommand, Name: p.Playbook}
	case KindScheduled:
		return provenance.Origin{Kind: provenance.OriginSchedule, Name: p.Playbook}
	case KindChat:
		return provenance.Origin{Kind: provenance.OriginChat, Name: p.Conversation, Untrusted: p.Untrusted}
	case KindTrigger:
		if p.Mail {
			return provenance.Origin{Kind: provenance.OriginMail, Name: p.Trigger}
		}
		return provenance.Origin{Kind: provenance.OriginTrigger, Name: p.Trigger}
	}
	return provenance.Origin{Kind: provenance.OriginTerminal}
}
