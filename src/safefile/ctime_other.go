//go:build unix && !linux && !darwin

package safefile

// trustsCtime: on other systems every Scan lists every directory.
func trustsCtime(string) bool { return false }
