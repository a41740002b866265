package main

import (
	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/errs"
)

// configHints are the words of config.yaml's advice (src/config/kinds.go).
var configHints = map[errs.Kind]words{
	config.Invalid: say("correct that line of config.yaml; `hobbs config keys` lists every key with its default and meaning"),
	config.UnknownKey: func(f errs.Facts) string {
		if f["suggest"] != "" {
			return fill("did you mean {suggest}? hobbs config keys lists every key", f)
		}
		return "hobbs config keys lists every key"
	},
}
