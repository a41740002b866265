package errs

import "strings"

// usageMessages are how cobra and pflag word the usage errors they make
// themselves (an unknown command or flag, a wrong number of arguments, a
// missing flag), which carry no exit code of their own.
var usageMessages = []string{"unknown command", "unknown flag", "unknown shorthand", "accepts ", "requires at least",
	"requires at most", "invalid argument", "flag needs an argument", "required flag", "if any flags in the group"}

// IsUsageMessage reports whether msg is a usage error of the command-line
// parser (exit 2).
func IsUsageMessage(msg string) bool {
	for _, p := range usageMessages {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}
