//go:build !linux

package egress

// Outside Linux every connection is served by goroutines.

type loopGroup struct{}

func (loopGroup) stopAccepting() {}

func (s *Server) startLoops(*fastListener) bool { return false }

// DefaultEventLoops is 0: outside Linux there are no event loops.
func DefaultEventLoops() int { return 0 }
