package telegram

import (
	"strconv"
	"strings"
	"unicode"

	"github.com/go-telegram/bot/models"

	"github.com/hobbs-agent/hobbs/src/channel"
)

// Text a message carries from someone else. Telegram hands the bot a
// forwarded message as a message of the owner's, with forward_origin
// saying whose it was; a reply with reply_to_message (the message replied
// to, in the same chat), external_reply (one in another chat) and quote
// (the part of either the owner quoted)
// (https://core.telegram.org/bots/api#message). None of that is the
// owner's own words: ownerMessage keeps it apart, as channel.Quoted, and
// the conversation takes it as untrusted input to its turn.

// maxFrom bounds the name of a quoted text's author, as the channel passes
// it on.
const maxFrom = 64

// ownerMessage is m, from the owner's chat owner, as the owner's message:
// the owner's own text, and apart from it what m carries from others.
//   - A forwarded message (forward_origin, or an automatic forward) is
//     wholly someone else's: its text is quoted, the owner wrote nothing.
//   - A quote is quoted, unless it is of the owner's own message.
//   - Without a quote, the text of the message replied to is quoted,
//     unless the owner wrote it (the bot's own messages count as others':
//     a notice carries what a run read).
func ownerMessage(m *models.Message, owner int64) channel.Message {
	if m.ForwardOrigin != nil || m.IsAutomaticForward {
		return channel.Message{Quoted: []channel.Quoted{{Kind: channel.QuoteForwarded, From: originName(m.ForwardOrigin), Text: m.Text}}}
	}
	msg := channel.Message{Text: m.Text}
	r := m.ReplyToMessage
	own := r != nil && r.From != nil && r.From.ID == owner && r.ForwardOrigin == nil && !r.IsAutomaticForward
	from := ""
	switch {
	case r != nil && r.ForwardOrigin != nil:
		from = originName(r.ForwardOrigin)
	case r != nil:
		from = userName(r.From)
	case m.ExternalReply != nil:
		from = originName(&m.ExternalReply.Origin)
	}
	switch {
	case m.Quote != nil && !own && strings.TrimSpace(m.Quote.Text) != "":
		msg.Quoted = append(msg.Quoted, channel.Quoted{Kind: channel.QuoteQuote, From: from, Text: m.Quote.Text})
	case m.Quote == nil && r != nil && !own:
		if t := replyText(r); strings.TrimSpace(t) != "" {
			msg.Quoted = append(msg.Quoted, channel.Quoted{Kind: channel.QuoteReply, From: from, Text: t})
		}
	}
	return msg
}

// replyText is the text of a message replied to: its text or its caption.
func replyText(r *models.Message) string {
	if r.Text != "" {
		return r.Text
	}
	return r.Caption
}

// originName names who wrote a message as its origin says ("" when it
// does not say).
func originName(o *models.MessageOrigin) string {
	if o == nil {
		return ""
	}
	switch {
	case o.MessageOriginUser != nil:
		return userName(&o.MessageOriginUser.SenderUser)
	case o.MessageOriginHiddenUser != nil:
		return clean(o.MessageOriginHiddenUser.SenderUserName) + " (hidden user)"
	case o.MessageOriginChat != nil:
		return chatName(&o.MessageOriginChat.SenderChat)
	case o.MessageOriginChannel != nil:
		return chatName(&o.MessageOriginChannel.Chat)
	}
	return ""
}

func userName(u *models.User) string {
	if u == nil {
		return ""
	}
	n := strings.TrimSpace(u.FirstName + " " + u.LastName)
	if u.Username != "" {
		n += " @" + u.Username
	}
	if u.IsBot {
		n += " (bot)"
	}
	return clean(n + " (user " + strconv.FormatInt(u.ID, 10) + ")")
}

func chatName(c *models.Chat) string {
	n := c.Title
	if c.Username != "" {
		n += " @" + c.Username
	}
	return clean(strings.TrimSpace(n) + " (chat " + strconv.FormatInt(c.ID, 10) + ")")
}

// clean is a name from outside as the host passes it on: no control or
// format characters (no line breaks, no bidirectional overrides), at most
// maxFrom characters.
func clean(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.In(r, unicode.Cf) {
			return -1
		}
		return r
	}, s)
	if r := []rune(s); len(r) > maxFrom {
		s = string(r[:maxFrom-1]) + "…"
	}
	return s
}
