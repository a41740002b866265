package main

import (
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/hobbs-agent/hobbs/src/provenance"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// provsession begin|end NAME [HOST...]: what the launcher does for a
// session's provenance around a session the scenario plays itself (the
// scenarios have no engine): begin records its start as the owner's
// terminal session; end records its end, its proxy having passed it
// responses from each HOST (host:port), trusting only the claude service.
func cmdProvSession(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 || (args[0] != "begin" && args[0] != "end") {
		ts.Fatalf("usage: provsession begin|end NAME [HOST...]")
	}
	s := provenance.New(safefile.Beneath(ts.Getenv("HOBBS_HOME")), nil)
	var err error
	if args[0] == "begin" {
		err = s.Begin(args[1], provenance.Origin{Kind: provenance.OriginTerminal}, "scenario", 0, nil)
	} else {
		hosts := args[2:]
		_, err = s.End(args[1], func(provenance.Session) ([]string, error) { return hosts, nil },
			func(h string) bool { return h == "api.anthropic.com" }, nil)
	}
	if (err != nil) != neg {
		ts.Fatalf("provsession %v: %v", args, err)
	}
}
