package main

import (
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// today: set $TODAY to the current UTC date (YYYY-MM-DD), the date hobbs
// writes into playbooks, so that expected files can use ${TODAY} with cmpenv,
// and $TODAYID to it as ids spell it (YYYYMMDD).
func cmdToday(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: today")
	}
	now := time.Now().UTC()
	ts.Setenv("TODAY", now.Format("2006-01-02"))
	ts.Setenv("TODAYID", now.Format("20060102"))
}
