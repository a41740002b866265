package egress

import (
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// idleFor reports how long c has neither sent nor received data, from the
// kernel's TCP_INFO (no per-byte bookkeeping in the relay). Unknown (not a
// TCP socket, e.g. a client on the proxy's unix socket): -1.
func idleFor(c net.Conn) time.Duration {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return -1
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return -1
	}
	idle := time.Duration(-1)
	rc.Control(func(fd uintptr) {
		info, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
		if err != nil {
			return
		}
		ms := min(info.Last_data_recv, info.Last_data_sent)
		idle = time.Duration(ms) * time.Millisecond
	})
	return idle
}
