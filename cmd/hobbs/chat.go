package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hobbs-agent/hobbs/src/chat"
	"github.com/hobbs-agent/hobbs/src/instance"
)

func newChatCmd(a *app) *cobra.Command {
	var conversation string
	cmd := &cobra.Command{
		Use:   "chat MESSAGE",
		Short: "Send Hobbs a message and print the reply: one chat turn, as a channel's message runs",
		Long: `One turn of a conversation, as a channel's message runs it: headless, in a fresh container with
a session's policy and secrets, given the turns the host kept (docs/identity.md, "A chat turn").

A turn that read untrusted input (a host not under trusted: in policy.yaml) taints its conversation: every later
turn of it starts tainted, so what it changes waits for hobbs review, until you send /trust (or /new).`,
		Example: "  hobbs chat \"what is on my list today?\"\n  hobbs chat --conversation work \"and tomorrow?\"\n  hobbs chat /new   # start the conversation afresh (its turns move to chat/archive/)\n  hobbs chat /trust # trust the conversation again after a turn read untrusted input",
		Args:    usageArgs(cobra.ExactArgs(1)),
	}
	cmd.Flags().StringVar(&conversation, "conversation", "terminal", "the conversation `ID` the message continues")
	cmd.RunE = a.withExistingInstance(func(_ *cobra.Command, args []string, in instance.Instance) error {
		r, err := a.headlessRunner(in)
		if err != nil {
			return err
		}
		t, err := chat.ForRunner(r)
		if err != nil {
			return err
		}
		reply, err := t.Turn(a.ctx, conversation, args[0])
		if err == nil {
			fmt.Fprintln(a.out, reply)
		}
		return err
	})
	return cmd
}
