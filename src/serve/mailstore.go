package serve

import (
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"strings"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/channel"
	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/mail"
)

// A queued mail run keeps, beside its event, serve/mail-runs/JOB/ (the job's id): the
// message's attachments (files/NAME, the names mail.Parse made safe) and
// whom a reply goes to (reply.json: the sender checked by mail.Check,
// never an address from the body or the run's output). Debounce folds a
// later message of the thread into the run: its files replace these.

// replyTo is whom and what a run's reply answers.
type replyTo struct {
	To         string   `json:"to"`
	Subject    string   `json:"subject"`
	MessageID  string   `json:"message_id"`
	References []string `json:"references"`
}

func (s store) mailRunDir(job string) string { return filepath.Join(s.in.Serve(), "mail-runs", job) }

// writeMailFiles keeps a queued mail run's attachments and reply address.
func (s store) writeMailFiles(job string, files map[string][]byte, r replyTo) error {
	dir := s.mailRunDir(job)
	_ = s.fs().RemoveAll(dir)
	if err := s.fs().MkdirAll(filepath.Join(dir, "files"), 0o700); err != nil {
		return err
	}
	for name, data := range files {
		if err := s.fs().Write(filepath.Join(dir, "files", name), data, 0o600); err != nil {
			return fmt.Errorf("attachment %s: %w", name, err)
		}
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return s.fs().Write(filepath.Join(dir, "reply.json"), b, 0o600)
}

// mailFiles reads a mail run's attachments (none when they cannot be read).
func (s store) mailFiles(job string) map[string][]byte {
	dir := filepath.Join(s.mailRunDir(job), "files")
	es, err := s.fs().ReadDir(dir)
	if err != nil {
		return nil
	}
	out := map[string][]byte{}
	for _, e := range es {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if b, err := s.fs().ReadFile(filepath.Join(dir, e.Name()), instance.MaxServeFile); err == nil {
			out[e.Name()] = b
		}
	}
	return out
}

// mailReply reads whom a mail run's reply goes to.
func (s store) mailReply(job string) (replyTo, error) {
	var r replyTo
	b, err := s.fs().ReadFile(filepath.Join(s.mailRunDir(job), "reply.json"), 64<<10)
	if err != nil {
		return r, err
	}
	return r, json.Unmarshal(b, &r)
}

// sweepMailRuns removes the files of mail runs no longer queued or
// running (dropped by /stop, or interrupted by a stop of the service).
func (s *Service) sweepMailRuns() {
	es, err := s.st.fs().ReadDir(filepath.Join(s.in().Serve(), "mail-runs"))
	if err != nil {
		return
	}
	live := map[string]bool{}
	for _, j := range s.q.list() {
		if j.State != Done {
			live[j.ID] = true
		}
	}
	for _, e := range es {
		if !live[e.Name()] {
			_ = s.st.fs().RemoveAll(s.st.mailRunDir(e.Name()))
		}
	}
}

func (s *Service) in() instance.Instance { return s.st.in }

// mailRunEnded sends a mail run's reply when its trigger says reply: true
// and the run ended ok with a report, then drops the run's files.
func (s *Service) mailRunEnded(j Job, res Result) {
	if j.Source != config.TriggerIMAP {
		return
	}
	defer func() { _ = s.st.fs().RemoveAll(s.st.mailRunDir(j.ID)) }()
	var box *mailBox
	for _, b := range s.mail.boxes {
		if b.name == j.Trigger {
			box = b
		}
	}
	if box == nil || !box.t.Reply || strings.TrimSpace(res.Report) == "" || res.Outcome != "ok" {
		return
	}
	to, err := s.st.mailReply(j.ID)
	if err != nil {
		s.logf("trigger %s: no reply for %s: %v", j.Trigger, j.Task, err)
		return
	}
	t := box.t
	user := t.SMTPUser
	if user == "" {
		user = t.User
	}
	r := mail.Reply{Addr: t.SMTPAddr(), TLS: smtpTLS(t), User: user, Password: box.smtpPass, From: t.User,
		To: to.To, Subject: to.Subject, InReplyTo: to.MessageID, References: to.References, Body: res.Report, TLSConfig: mail.TLSConfig(hostOf(t.SMTPAddr()), box.roots)}
	err = r.Send()
	outcome, detail := "ok", map[string]any{"task": j.Task, "to": to.To}
	if err != nil {
		outcome, detail["reason"] = "failed", firstLine(err.Error())
		s.deliver(channel.Notice{ID: "mail:" + j.Task + ":reply", Text: fmt.Sprintf("trigger %s: the reply of %s to %s was not sent: %s", j.Trigger, j.Task, to.To, firstLine(err.Error()))})
	}
	s.audit(audit.Entry{Event: "serve.mail.reply", Subject: j.Trigger, Outcome: outcome, Detail: detail})
}

// smtpTLS is how the submission server is reached: implicit TLS on 465,
// none on a loopback host with tls: none, else STARTTLS.
func smtpTLS(t config.Trigger) string {
	switch {
	case t.SMTPPort == 465:
		return config.TLSImplicit
	case t.TLSMode() == config.TLSNone && config.Loopback(strings.Trim(hostOf(t.SMTPAddr()), "[]")):
		return config.TLSNone
	}
	return config.TLSStartTLS
}

// hostOf is the host of HOST:PORT, without an IPv6 address's brackets.
func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}
