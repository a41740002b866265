package chat

import "github.com/hobbs-agent/hobbs/src/errs"

// The kinds of advice chat's errors carry; cmd/hobbs words them
// (hints_chat.go). Facts: path (the conversation's file).
const (
	UnreadableConversation errs.Kind = "chat.unreadable-conversation"
	UnparsableConversation errs.Kind = "chat.unparsable-conversation"
)
