package audit

import (
	"strings"
	"testing"
)

// TestSecretKindFindsWhatRedactHides: every credential Redact removes is
// named by SecretKind, so a store that refuses SecretKind's text never
// holds what the logs would hide.
func TestSecretKindFindsWhatRedactHides(t *testing.T) {
	cases := map[string]string{
		"token ghp_" + strings.Repeat("a1B2", 9):                         "github-token",
		"github_pat_11ABCDEFG0_" + strings.Repeat("x", 40):               "github-token",
		"key=sk-ant-api03-" + strings.Repeat("Q", 40):                    "anthropic-key",
		"sk-proj-" + strings.Repeat("k", 40):                             "openai-key",
		"AKIAIOSFODNN7EXAMPLE is the id":                                 "aws-key-id",
		"xoxb-123456789012-abcdefghij":                                   "slack-token",
		"Authorization: Bearer eyJhbGciOi.eyJzdWIi.sig-_x":               "bearer",
		"bearer " + strings.Repeat("q", 40):                              "bearer",
		"Proxy-Authorization: Basic aG9iYnM6c2VjcmV0dG9rZW4=":            "basic-auth",
		"AGE-SECRET-KEY-1QQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQ":      "age-secret-key",
		"the proxy is http://hobbs:s3cr3t-token@proxy:3128":              "url-password",
		"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n": "private-key",
	}
	for in, want := range cases {
		if got := SecretKind(in); got != want {
			t.Errorf("SecretKind(%q) = %q, want %q", in, got, want)
		}
		if Redact(in) == in {
			t.Errorf("Redact(%q) left it as it is", in)
		}
	}
}

// TestSecretKindLeavesProse: the words "basic" and "bearer" in a sentence
// are not credentials, nor are addresses without a password.
func TestSecretKindLeavesProse(t *testing.T) {
	for _, s := range []string{
		"The user prefers basic formatting in reports",
		"Basic information goes first; the bearer of bad news is the auditor",
		"Bearer responsibilities are listed in the handbook",
		"The repository is https://github.com/user/repo and ssh://git@github.com/x",
		"mem_20260101_001 supersedes the task-management notes",
		"",
	} {
		if got := SecretKind(s); got != "" {
			t.Errorf("SecretKind(%q) = %q, want none", s, got)
		}
	}
}
