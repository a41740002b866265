package serve

import (
	"context"
	"path/filepath"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/channel"
	"github.com/hobbs-agent/hobbs/src/channel/telegram"
	"github.com/hobbs-agent/hobbs/src/chat"
	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
)

// The channels config.yaml sets up (channels:), and chat turns for the
// owner's messages on them. The bot token is read from the vault here, by
// the host service, and never enters a container.

// TelegramDir is the Telegram channel's host-only state under the
// instance: owners, pairing codes, outbox, inbox, buttons, the offset.
func TelegramDir(in instance.Instance) string { return filepath.Join(in.Serve(), "telegram") }

// TelegramOptions are the options of the instance's Telegram channel
// without its token: enough to pair (telegram.Pair) or list owners.
func TelegramOptions(in instance.Instance, o Options) telegram.Options {
	return telegram.Options{APIURL: o.Config.Channels.Telegram.APIURL, FS: in.FS(), Dir: TelegramDir(in), Audit: o.Audit}
}

// setUpChannels fills opt.Channels from config.yaml when the caller gave
// none, and opt.Chat from the launcher when it can run turns.
func (s *Service) setUpChannels() error {
	opt := &s.opt
	if opt.Chat == nil && opt.Launcher.Config != nil {
		t, err := chat.ForRunner(opt.Launcher)
		if err != nil {
			return err
		}
		// Telegram is the one channel: its chat ids name the conversations.
		opt.Chat = func(ctx context.Context, conversation string, m channel.Message) (string, error) {
			return t.TurnMessage(ctx, chatID("telegram", conversation), m)
		}
	}
	if opt.Channels != nil || !opt.Config.Channels.Telegram.Enabled() {
		return nil
	}
	entry := opt.Config.Channels.Telegram.Token
	tok, err := opt.Secret(entry)
	if err != nil {
		return errs.Failf("channels.telegram: the bot token (vault entry %s): %v", entry, err).
			Advise(NoBotToken, "entry", entry)
	}
	to := TelegramOptions(opt.Instance, *opt)
	to.Token, to.Logf = string(tok), s.logf
	ch, err := telegram.New(to)
	if err != nil {
		return errs.Wrap(errs.Failure, err, "channels.telegram")
	}
	opt.Channels = []channel.Channel{ch}
	return nil
}

// chatID is the conversation a channel's chat continues: the channel's
// name and its own id for the chat (chat.ValidID).
func chatID(ch, conversation string) string { return ch + "-" + conversation }

// Pair makes a one-time code that pairs the owner's chat on channel (only
// "telegram"): the owner sends /start CODE to the bot (telegram.Pair).
func Pair(in instance.Instance, channel string, log *audit.Logger) (telegram.Pairing, error) {
	if channel != "telegram" {
		return telegram.Pairing{}, errs.Usagef("unknown channel %q", channel).Advise(OnlyTelegram)
	}
	cfg, err := config.Load(in.FS(), in.Config())
	if err != nil {
		return telegram.Pairing{}, err
	}
	if !cfg.Channels.Telegram.Enabled() {
		return telegram.Pairing{}, errs.Usagef("no Telegram channel is set up (config.yaml channels.telegram.token)").
			Advise(NoTelegram)
	}
	return telegram.Pair(TelegramOptions(in, Options{Config: cfg, Audit: log}))
}
