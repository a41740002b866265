package main

import (
	"github.com/hobbs-agent/hobbs/src/chat"
	"github.com/hobbs-agent/hobbs/src/errs"
)

// chatHints words the advice of package chat.
var chatHints = map[errs.Kind]words{
	chat.UnreadableConversation: say("move {path} away to start the conversation afresh"),
	chat.UnparsableConversation: say("fix it, or move it away to start the conversation afresh; Hobbs never rewrites a file it cannot parse"),
}
