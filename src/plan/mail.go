package plan

import (
	"regexp"
	"sort"
)

// TriggerSourceIMAP is the source of a run a mail message started
// (config.TriggerIMAP): its origin is mail, and it may be given the
// message's attachments.
const TriggerSourceIMAP = "imap"

// SessionAttachmentDir is where a mail run's agent finds the message's
// attachments, each a read-only session file.
const SessionAttachmentDir = SessionDir + "/attachments"

// attachmentNameRe is a name serve's mail parsing makes (mail.safeName):
// nothing else becomes a path.
var attachmentNameRe = regexp.MustCompile(`^[0-9]{2}-[A-Za-z0-9._ -]{1,100}$`)

// attachments mounts a mail's attachments into the agent's container c,
// read-only; a name that is not a plain file name is left out.
func (p *Plan) attachments(c *Container, t *Trigger) {
	if t.Source != TriggerSourceIMAP || len(t.Attachments) == 0 {
		return
	}
	names := make([]string, 0, len(t.Attachments))
	for n := range t.Attachments {
		if attachmentNameRe.MatchString(n) && n != "." && n != ".." {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	p.Attachments = map[string][]byte{}
	for _, n := range names {
		p.Attachments[n] = append([]byte{}, t.Attachments[n]...)
		c.Mounts = append(c.Mounts, p.sessionFile("attachment-"+n, SessionAttachmentDir+"/"+n, RoleAgent,
			"an attachment of the mail that started the run: untrusted input"))
	}
}
