//go:build unix && !linux

package h1client

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
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
	var buf [1]byte
	err = rc.Read(func(fd uintptr) bool {
		_, _, err := unix.Recvfrom(int(fd), buf[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		ok = err == unix.EAGAIN || err == unix.EWOULDBLOCK
		return true // never wait: the answer is now
	})
	return err == nil && ok
}
