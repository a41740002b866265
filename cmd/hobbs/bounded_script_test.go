package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// maxRSSMain is the scenarios' maxrss command: "maxrss MIB COMMAND
// [ARG...]" runs COMMAND with the scenario's environment, passes its
// output through, and fails (exit 1, after the command's own output) when
// the command's peak resident set (getrusage's ru_maxrss, in KiB on Linux)
// was over MIB mebibytes; otherwise it exits with the command's status. It
// runs as a command of its own (TestMain), so the measure is the child's
// alone.
func maxRSSMain(args []string) int {
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: maxrss MIB COMMAND [ARG...]")
		return 2
	}
	limit, err := strconv.Atoi(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "maxrss: MIB:", err)
		return 2
	}
	cmd := exec.Command(args[1], args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err = cmd.Run()
	if cmd.ProcessState == nil {
		fmt.Fprintln(os.Stderr, "maxrss:", err)
		return 2
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		fmt.Fprintln(os.Stderr, "maxrss: no resource usage on this system")
		return 2
	}
	peak := ru.Maxrss >> 10 // KiB on Linux
	fmt.Fprintf(os.Stderr, "maxrss: %s peaked at %d MiB (limit %d MiB)\n", args[1], peak, limit)
	if peak > int64(limit) {
		return 1
	}
	return cmd.ProcessState.ExitCode()
}
