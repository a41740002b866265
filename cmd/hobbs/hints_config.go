package main

import (
	"github.com/hobbs-agent/hobbs/src/config"
	"github.com/hobbs-agent/hobbs/src/errs"
)

// configHints are the words of config.yaml's advice (src/config/kinds.go).
var configHints = map[errs.Kind]words{
	config.Invalid: say("correct that line of config.yaml; `hobbs config keys` lists every key with its default and meaning"),
}
