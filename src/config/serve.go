package config

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"time"
)

// Serve configures hobbs serve: where its webhook listener listens and how
// many triggered runs it runs at once (the rest wait in its queue).
type Serve struct {
	Listen  string `yaml:"listen" json:"listen"`
	MaxRuns int    `yaml:"max_runs" json:"max_runs"`
	// MaxQueue bounds the runs waiting across all triggers (0: the
	// default); a delivery beyond it is shed (QueueBound).
	MaxQueue int `yaml:"max_queue" json:"max_queue"`
}

// The defaults of serve: loopback only, two runs at a time.
const (
	DefaultServeListen  = "127.0.0.1:8421"
	DefaultServeMaxRuns = 2
)

// The defaults of the queue's bounds: runs waiting across all triggers,
// runs waiting for one trigger, and the runs one sender may start through
// one trigger in an hour.
const (
	DefaultServeMaxQueue    = 50
	DefaultTriggerMaxQueue  = 20
	DefaultTriggerPerSender = 5
)

// QueueBound is serve.max_queue, or its default.
func (s Serve) QueueBound() int {
	if s.MaxQueue == 0 {
		return DefaultServeMaxQueue
	}
	return s.MaxQueue
}

// Trigger is one entry of triggers:: a webhook at POST /hooks/NAME that
// runs Playbook for the Events listed, once its signature checks out
// against the shared secret in the vault entry Secret.
type Trigger struct {
	// Source is who signs the deliveries: TriggerGitHub, TriggerGitLab or
	// TriggerGeneric.
	Source   string   `yaml:"source" json:"source"`
	Secret   string   `yaml:"secret" json:"secret"` // vault entry holding the shared secret
	Playbook string   `yaml:"playbook" json:"playbook"`
	Events   []string `yaml:"events" json:"events"`
	// Debounce: deliveries with the same key (the trigger and the
	// repository and issue or merge request) within this window make one
	// run ("10s"; "" or "0": every delivery runs).
	Debounce string `yaml:"debounce,omitempty" json:"debounce,omitempty"`
	// IgnoreBots drops deliveries a bot sent (nil: true).
	IgnoreBots *bool `yaml:"ignore_bots,omitempty" json:"ignore_bots,omitempty"`
	// MaxQueue bounds this trigger's waiting runs (0: the default).
	MaxQueue int `yaml:"max_queue,omitempty" json:"max_queue,omitempty"`
	// PerSender bounds the runs one sender starts through this trigger in
	// an hour (0: the default).
	PerSender int `yaml:"per_sender,omitempty" json:"per_sender,omitempty"`
	// OwnerLogin is the owner's own account at the source: never limited
	// per sender, and given a lane of the queue strangers cannot fill.
	OwnerLogin string `yaml:"owner_login,omitempty" json:"owner_login,omitempty"`
	// The keys of source: imap (mail.go); a webhook trigger has none.
	IMAP `yaml:",inline"`
}

// QueueBound is t.MaxQueue, or its default.
func (t Trigger) QueueBound() int {
	if t.MaxQueue == 0 {
		return DefaultTriggerMaxQueue
	}
	return t.MaxQueue
}

// SenderBound is t.PerSender, or its default.
func (t Trigger) SenderBound() int {
	if t.PerSender == 0 {
		return DefaultTriggerPerSender
	}
	return t.PerSender
}

// The trigger sources.
const (
	TriggerGitHub  = "github"  // X-Hub-Signature-256: sha256=HMAC-SHA256 of the body; X-GitHub-Event, X-GitHub-Delivery
	TriggerGitLab  = "gitlab"  // X-Gitlab-Token: the secret itself; X-Gitlab-Event, X-Gitlab-Event-UUID
	TriggerGeneric = "generic" // X-Hub-Signature-256 as GitHub's; X-Hub-Event, X-Hub-Delivery
	TriggerIMAP    = "imap"    // a mailbox hobbs serve watches (mail.go), no webhook
)

// DebounceDuration is t.Debounce as a duration (0: none); Validate refuses
// a value that does not parse.
func (t Trigger) DebounceDuration() time.Duration {
	if t.Debounce == "" {
		return 0
	}
	d, _ := time.ParseDuration(t.Debounce)
	return d
}

// DropsBots reports whether deliveries sent by a bot are dropped
// (ignore_bots, true unless set false).
func (t Trigger) DropsBots() bool { return t.IgnoreBots == nil || *t.IgnoreBots }

// Channels are the ways hobbs serve reaches its owner.
type Channels struct {
	Telegram Telegram `yaml:"telegram" json:"telegram"`
}

// Telegram is the Telegram channel: the Bot API server (Telegram's, or a
// self-hosted one) and the vault entry holding the bot's token, which only
// hobbs serve on the host reads. No token: the channel is off.
type Telegram struct {
	APIURL string `yaml:"api_url" json:"api_url"`
	Token  string `yaml:"token" json:"token"`
}

// DefaultTelegramAPI is Telegram's Bot API server.
const DefaultTelegramAPI = "https://api.telegram.org"

// Enabled reports whether the Telegram channel is configured.
func (t Telegram) Enabled() bool { return t.Token != "" }

var (
	triggerNameRe = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)
	playbookRe    = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	eventRe       = regexp.MustCompile(`^[A-Za-z0-9_ .:-]{1,64}$`)
)

// The largest values of the queue's bounds.
const (
	MaxQueueBound = 10000
	MaxPerSender  = 1000
)

var ownerLoginRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// MaxDebounce bounds a trigger's debounce window.
const MaxDebounce = time.Hour

// TriggerNames are the triggers' names, sorted.
func (c *Config) TriggerNames() []string {
	out := make([]string, 0, len(c.Triggers))
	for k := range c.Triggers {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// validateServe checks serve:, triggers: and channels:.
func (c *Config) validateServe(bad func(keys []string, format string, args ...any)) {
	if host, port, err := net.SplitHostPort(c.Serve.Listen); err != nil {
		bad([]string{"serve", "listen"}, "%q is not HOST:PORT, e.g. %s", c.Serve.Listen, DefaultServeListen)
	} else if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		bad([]string{"serve", "listen"}, "%q: the port must be 1 to 65535", c.Serve.Listen)
	} else if host == "" {
		bad([]string{"serve", "listen"}, "%q listens on every address: name one (127.0.0.1 behind a proxy or tunnel, 0.0.0.0 to mean every address)", c.Serve.Listen)
	}
	if c.Serve.MaxRuns < 1 || c.Serve.MaxRuns > 64 {
		bad([]string{"serve", "max_runs"}, "must be 1 to 64")
	}
	if c.Serve.MaxQueue < 0 || c.Serve.MaxQueue > MaxQueueBound {
		bad([]string{"serve", "max_queue"}, "must be 1 to %d (runs waiting across all triggers)", MaxQueueBound)
	}
	for _, name := range c.TriggerNames() {
		t := c.Triggers[name]
		at := func(k string) []string { return []string{"triggers", name, k} }
		if t.Source == TriggerIMAP && triggerNameRe.MatchString(name) {
			validateIMAP(t, at, bad)
			continue
		}
		if t.IMAP.set() {
			bad([]string{"triggers", name}, "host, user, from and the other mail keys belong to a trigger with source: imap")
		}
		switch {
		case !triggerNameRe.MatchString(name):
			bad([]string{"triggers", name}, "a trigger's name is lower-case letters, digits and dashes (it is the URL's last part: /hooks/NAME)")
		case t.Source != TriggerGitHub && t.Source != TriggerGitLab && t.Source != TriggerGeneric:
			bad(at("source"), "%q is not a source: github, gitlab or generic", t.Source)
		case !vaultEntryRe.MatchString(t.Secret):
			bad(at("secret"), "%q is not a vault entry name (the entry holding the webhook's shared secret)", t.Secret)
		case !playbookRe.MatchString(t.Playbook):
			bad(at("playbook"), "%q is not a playbook name (kebab-case, as in playbooks/NAME.md)", t.Playbook)
		case len(t.Events) == 0:
			bad(at("events"), "name the events that start a run, e.g. events: [issues]")
		default:
			for _, e := range t.Events {
				if !eventRe.MatchString(e) {
					bad(at("events"), "%q is not an event name (GitHub's X-GitHub-Event, GitLab's X-Gitlab-Event)", e)
				}
			}
			if t.MaxQueue < 0 || t.MaxQueue > MaxQueueBound {
				bad(at("max_queue"), "must be 1 to %d (this trigger's runs waiting)", MaxQueueBound)
			}
			if t.PerSender < 0 || t.PerSender > MaxPerSender {
				bad(at("per_sender"), "must be 1 to %d (runs one sender may start in an hour)", MaxPerSender)
			}
			if t.OwnerLogin != "" && !ownerLoginRe.MatchString(t.OwnerLogin) {
				bad(at("owner_login"), "%q is not an account name at the source (letters, digits, . _ -)", t.OwnerLogin)
			}
			if t.Debounce != "" {
				if d, err := time.ParseDuration(t.Debounce); err != nil || d < 0 || d > MaxDebounce {
					bad(at("debounce"), "%q is not a duration from 0 to 1h, e.g. 10s", t.Debounce)
				}
			}
		}
	}
	tg := c.Channels.Telegram
	if u, err := url.Parse(tg.APIURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		bad([]string{"channels", "telegram", "api_url"}, "%q is not an http(s) URL without credentials", tg.APIURL)
	}
	if tg.Token != "" && !vaultEntryRe.MatchString(tg.Token) {
		bad([]string{"channels", "telegram", "token"}, "%q is not a vault entry name (the entry holding the bot's token; never the token itself)", tg.Token)
	}
}

// String names a trigger for messages: "NAME (source, playbook P)".
func (t Trigger) String() string {
	return fmt.Sprintf("%s, playbook %s", t.Source, t.Playbook)
}
