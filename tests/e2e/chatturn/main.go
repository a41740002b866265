// Command chatturn is the end-to-end tests' driver of one chat turn: it
// sets up chat.Turns for the instance at $HOBBS_HOME as hobbs serve does
// for its channel (Host.Chat) and calls Turn once. Usage: chatturn
// CONVERSATION TEXT. The reply goes to stdout; a failed turn's error to
// stderr, with exit 1. The agent's standard error and progress go to
// stderr.
package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"

	hobbs "github.com/hobbs-agent/hobbs"
	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/chat"
	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/egress"
	"github.com/hobbs-agent/hobbs/src/engine"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/launcher"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: chatturn CONVERSATION TEXT")
		os.Exit(2)
	}
	reply, err := turn(os.Args[1], os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "chatturn:", err)
		os.Exit(1)
	}
	fmt.Print(reply)
}

func turn(conversation, text string) (string, error) {
	in, err := instance.At(os.Getenv("HOBBS_HOME"))
	if err != nil {
		return "", err
	}
	cfg, err := config.Load(in.FS(), in.Config())
	if err != nil {
		return "", err
	}
	def, err := fs.ReadFile(hobbs.Dist, "policy.yaml")
	if err != nil {
		return "", err
	}
	pol, err := egress.LoadEffective(in.FS(), "built-in dist/policy.yaml", def, in.Policy())
	if err != nil {
		return "", err
	}
	progress := func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	t := &chat.Turns{Instance: in, Config: cfg, Policy: pol, Image: launcher.ImageRef(cfg.Image),
		Runtime: launcher.Runtime{Engine: engine.New(cfg.Engine), Stderr: os.Stderr, Progress: progress,
			Audit: audit.New(in.FS(), in.AuditLog())}}
	return t.Turn(context.Background(), conversation, text)
}
