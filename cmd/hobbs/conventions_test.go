package main

// Conventions every command must follow (docs/cli.md), checked over the
// whole command tree, so that a new command is covered without touching
// this file.

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// listingVerbs name the commands that list or show data: each must offer
// JSON output (docs/cli.md: "--json on every listing"). doctor and version
// are listed there by name too.
var listingVerbs = map[string]bool{"list": true, "show": true, "stats": true, "ps": true, "doctor": true, "version": true}

// walkCommands calls f for c and every command below it.
func walkCommands(c *cobra.Command, f func(*cobra.Command)) {
	f(c)
	for _, sub := range c.Commands() {
		walkCommands(sub, f)
	}
}

func TestEveryCommandHasExamples(t *testing.T) {
	root := newRoot(&app{})
	n := 0
	walkCommands(root, func(c *cobra.Command) {
		if c.Hidden {
			return
		}
		n++
		path := c.CommandPath()
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("%s: no Example in its help (docs/cli.md: every command has examples)", path)
		} else if !strings.Contains(c.Example, path) {
			t.Errorf("%s: its examples never show %q", path, path)
		}
	})
	if top := len(root.Commands()); n <= top {
		t.Fatalf("walked %d commands, no more than the %d top-level ones: the walk is broken", n, top)
	}
}

func TestEveryListingHasJSON(t *testing.T) {
	checked := 0
	walkCommands(newRoot(&app{}), func(c *cobra.Command) {
		if c.Hidden || !c.Runnable() || !listingVerbs[c.Name()] {
			return
		}
		checked++
		if !hasJSONOutput(c) {
			t.Errorf("%s: a listing without --json (or --format json)", c.CommandPath())
		}
	})
	// memory, playbook, agent, task and vault each have list and show or stats.
	if checked < 10 {
		t.Fatalf("checked only %d listing commands: the walk is broken", checked)
	}
}

// hasJSONOutput reports whether c has a boolean --json flag or a --format
// flag whose help offers json.
func hasJSONOutput(c *cobra.Command) bool {
	if f := c.Flags().Lookup("json"); f != nil && f.Value.Type() == "bool" {
		return true
	}
	if f := c.Flags().Lookup("format"); f != nil && strings.Contains(f.Usage, "json") {
		return true
	}
	return false
}

func TestHasJSONOutputDetectsMissingFlag(t *testing.T) {
	c := &cobra.Command{Use: "list"}
	if hasJSONOutput(c) {
		t.Fatal("a command without flags reported as having JSON output")
	}
	c.Flags().String("json", "", "not a switch")
	if hasJSONOutput(c) {
		t.Fatal("a string --json flag accepted")
	}
	d := &cobra.Command{Use: "show"}
	d.Flags().String("format", "text", "text or yaml")
	if hasJSONOutput(d) {
		t.Fatal("--format without json accepted")
	}
	d.Flags().Bool("json", false, "print as JSON")
	if !hasJSONOutput(d) {
		t.Fatal("--json not detected")
	}
}
