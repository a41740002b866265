package launcher

import "github.com/hobbs-agent/hobbs/src/errs"

// The kinds of advice the launcher's errors carry (worded in cmd/hobbs).
const (
	AWSKeyPair errs.Kind = "launcher.aws-key-pair" // an aws-sigv4 vault entry that is not a key pair: {vault}
)
