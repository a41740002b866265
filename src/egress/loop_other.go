//go:build !linux

package egress

import "syscall"

// Outside Linux every connection is served by goroutines.

// listenerControl does nothing: net/http sets TCP_NODELAY on each
// connection it accepts.
func listenerControl(string, string, syscall.RawConn) error { return nil }

type loopGroup struct{}

func (loopGroup) stopAccepting() {}

func (s *Server) startLoops(*fastListener) bool { return false }

// DefaultEventLoops is 0: outside Linux there are no event loops.
func DefaultEventLoops() int { return 0 }
