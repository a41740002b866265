package policy

import "time"

// The proxy writes one AuditLine per decision (src/egress); DeniedSince and
// ReadSince read them back for the launcher.

// AuditLine is the proxy's audit record, one line of its log
// (logs/egress/): audit.Entry's shape (time, actor, event, subject,
// outcome, detail) with the proxy's detail fields.
type AuditLine struct {
	Time    time.Time   `json:"time"`
	Actor   string      `json:"actor"`
	Session string      `json:"session,omitempty"` // the session whose traffic it is (the proxy's --session)
	Event   string      `json:"event"`
	Subject string      `json:"subject"`
	Outcome string      `json:"outcome"`
	Detail  AuditDetail `json:"detail"`
}

// AuditDetail is what an audit line says of the decision beyond audit.Entry.
type AuditDetail struct {
	Client     string   `json:"client"`
	Method     string   `json:"method"`
	IP         string   `json:"ip"`
	Rule       string   `json:"rule"`
	Reason     string   `json:"reason,omitempty"`
	Error      string   `json:"error,omitempty"`
	Path       string   `json:"path,omitempty"`
	Secrets    []string `json:"secrets,omitempty"`
	Leak       string   `json:"leak,omitempty"`
	BytesUp    int64    `json:"bytes_up"`
	BytesDown  int64    `json:"bytes_down"`
	DurationMS int64    `json:"duration_ms"`
}
