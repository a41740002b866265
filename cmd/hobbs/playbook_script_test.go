package main

import (
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// today: set $TODAY to the current UTC date (YYYY-MM-DD), the date hobbs
// writes into playbooks, so that expected files can use ${TODAY} with cmpenv.
func cmdToday(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: today")
	}
	ts.Setenv("TODAY", time.Now().UTC().Format("2006-01-02"))
}
