//go:build !linux

package egress

import (
	"net"
	"time"
)

// idleFor is not measured outside Linux: tunnels are not reaped for
// idleness there (the proxy runs in a Linux container).
func idleFor(net.Conn) time.Duration { return -1 }
