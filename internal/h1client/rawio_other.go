//go:build !linux

package h1client

import (
	"io"
	"net"
)

// wrapIO returns what the connection's buffers read and write: nc itself
// here (see rawio_linux.go).
func wrapIO(nc net.Conn) io.ReadWriter { return nc }
