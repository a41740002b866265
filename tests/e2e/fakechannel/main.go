// Command fakechannel is hobbs serve with a FAKE messaging channel, for the
// end-to-end tests. The channel stands for Telegram, whose servers cannot be
// reached here, as package channel defines a channel: it writes every notice
// it is handed to the file $FAKE_CHANNEL_OUT (a JSON object a line) and,
// when a notice carries a button of the kind $FAKE_CHANNEL_PRESS names,
// presses it through channel.Host.Act, as the paired owner's tap would, and
// writes the answer. The rest is hobbs serve's own code (serve.Serve with
// the launcher), wired as cmd/hobbs wires it.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/hobbs-agent/hobbs"
	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/channel"
	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/engine"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/launcher"
	"github.com/hobbs-agent/hobbs/src/playbook"
	"github.com/hobbs-agent/hobbs/src/serve"
)

// fakeChannel is the FAKE channel.
type fakeChannel struct {
	mu      sync.Mutex
	out     string
	press   string
	notices chan channel.Notice
}

func (c *fakeChannel) Name() string { return "fake" }

// write appends one JSON line to the output file.
func (c *fakeChannel) write(v any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(c.out, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.Write(append(b, '\n'))
	return err
}

// Deliver records the notice at once (durably) and hands it to Run.
func (c *fakeChannel) Deliver(n channel.Notice) error {
	if err := c.write(map[string]any{"notice": n}); err != nil {
		return err
	}
	select {
	case c.notices <- n:
	default:
	}
	return nil
}

// Run presses the buttons $FAKE_CHANNEL_PRESS names.
func (c *fakeChannel) Run(ctx context.Context, h channel.Host) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case n := <-c.notices:
			for _, b := range n.Buttons {
				if b.Kind != c.press {
					continue
				}
				ans, err := h.Act(ctx, b)
				e := ""
				if err != nil {
					e = err.Error()
				}
				_ = c.write(map[string]any{"pressed": b, "answer": ans, "error": e})
			}
		}
	}
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "fakechannel:", err)
		os.Exit(1)
	}
}

func run() error {
	in, err := instance.Resolve("")
	if err != nil {
		return err
	}
	cfg, err := config.Load(in.FS(), in.Config())
	if err != nil {
		return err
	}
	def, _ := fs.ReadFile(hobbs.Dist, "policy.yaml")
	tpl, _ := fs.ReadFile(hobbs.Templates, "playbook.md")
	log := audit.New(in.FS(), in.AuditLog())
	r := launcher.Runner{Instance: in, Config: cfg, Engine: engine.New(cfg.Engine), Assets: hobbs.Assets, DefaultPolicy: def,
		Audit: log, Stdout: os.Stderr, Stderr: os.Stderr,
		Status: func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }}
	st := playbook.Open(in, cfg.Playbooks.ReviewEveryDays, tpl, log)
	ch := &fakeChannel{out: os.Getenv("FAKE_CHANNEL_OUT"), press: os.Getenv("FAKE_CHANNEL_PRESS"), notices: make(chan channel.Notice, 64)}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serve.Serve(ctx, serve.Options{Launcher: r, Playbooks: st, Channels: []channel.Channel{ch}, Log: os.Stderr})
}
