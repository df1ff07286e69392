//go:build unix && !linux

package h1client

import "golang.org/x/sys/unix"

// peekWouldBlock peeks at one byte of socket fd without blocking and
// reports whether the peek would block.
func peekWouldBlock(fd uintptr) bool {
	var buf [1]byte
	_, _, err := unix.Recvfrom(int(fd), buf[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
	return err == unix.EAGAIN || err == unix.EWOULDBLOCK
}
