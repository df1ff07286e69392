//go:build unix

package h1client

import (
	"net"
	"syscall"
)

// peekAlive peeks, without blocking, at an idle connection's socket: it
// is alive when the peek would block (no data, no end of stream).
func peekAlive(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return true // not a socket: nothing to peek at
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	ok = false
	err = rc.Read(func(fd uintptr) bool {
		ok = peekWouldBlock(fd)
		return true // never wait: the answer is now
	})
	return err == nil && ok
}
