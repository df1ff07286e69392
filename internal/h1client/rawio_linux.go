package h1client

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawIO reads and writes a connection's socket with raw system calls,
// through the runtime's poller (syscall.RawConn): a read or write of a
// non-blocking socket never blocks (it fails with EAGAIN, and the
// goroutine then parks in the poller as net.Conn's would), so it need not
// tell the scheduler that it enters a system call. net.Conn's Read and
// Write do, and each such entry of a process that was idle wakes the
// runtime's monitor thread, which then polls every 20 µs for a
// millisecond; one that outlasts a poll also hands the processor to
// another thread. A load generator's process comes idle between most
// sends, so at 4,000 requests/s against a loopback server those wake-ups
// were a third of its context switches. Deadlines, Close and errors are
// as net.Conn's (its own poller descriptor serves both).
type rawIO struct {
	nc net.Conn
	rc syscall.RawConn
	// The current Read's and Write's buffer, bytes done and error, for
	// the RawConn callbacks (made once: a method value per call would
	// allocate). A connection carries one request at a time.
	rp, wp     []byte
	rn, wn     int
	rerr, werr syscall.Errno
	readFn     func(fd uintptr) bool
	writeFn    func(fd uintptr) bool
}

// maxRW bounds one read or write, as the runtime's poller does (some
// systems refuse larger ones).
const maxRW = 1 << 30

// wrapIO returns what the connection's buffers read and write: nc itself
// unless it is a socket whose descriptor raw system calls can reach.
func wrapIO(nc net.Conn) io.ReadWriter {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nc
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nc
	}
	r := &rawIO{nc: nc, rc: rc}
	r.readFn, r.writeFn = r.read, r.write
	return r
}

func (r *rawIO) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r.rp, r.rn, r.rerr = p[:min(len(p), maxRW)], 0, 0
	err := r.rc.Read(r.readFn)
	r.rp = nil
	switch {
	case err != nil:
		return 0, r.opError("read", err)
	case r.rerr != 0:
		return 0, r.opError("read", os.NewSyscallError("read", r.rerr))
	case r.rn == 0:
		return 0, io.EOF
	}
	return r.rn, nil
}

func (r *rawIO) read(fd uintptr) bool {
	for {
		n, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&r.rp[0])), uintptr(len(r.rp)))
		switch e {
		case 0:
			r.rn = int(n)
			return true
		case unix.EINTR:
		case unix.EAGAIN:
			return false // nothing yet: wait in the poller
		default:
			r.rerr = e
			return true
		}
	}
}

func (r *rawIO) Write(p []byte) (int, error) {
	r.wp, r.wn, r.werr = p, 0, 0
	var err error
	if len(p) > 0 {
		err = r.rc.Write(r.writeFn)
	}
	n := r.wn
	r.wp = nil
	switch {
	case err != nil:
		return n, r.opError("write", err)
	case r.werr != 0:
		return n, r.opError("write", os.NewSyscallError("write", r.werr))
	case n < len(p):
		return n, r.opError("write", io.ErrUnexpectedEOF)
	}
	return n, nil
}

func (r *rawIO) write(fd uintptr) bool {
	for r.wn < len(r.wp) {
		b := r.wp[r.wn:]
		b = b[:min(len(b), maxRW)]
		n, _, e := unix.RawSyscall(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		switch e {
		case 0:
			if n == 0 {
				return true // the caller reports the short write
			}
			r.wn += int(n)
		case unix.EINTR:
		case unix.EAGAIN:
			return false // the socket's buffer is full: wait in the poller
		default:
			r.werr = e
			return true
		}
	}
	return true
}

// opError wraps err as net.Conn's Read and Write would: in a
// *net.OpError naming the operation and the connection's addresses. An
// error of the RawConn (the connection closed, a deadline passed) is one
// already, named "raw-read" or "raw-write".
func (r *rawIO) opError(op string, err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) {
		err = oe.Err
	}
	la := r.nc.LocalAddr()
	return &net.OpError{Op: op, Net: la.Network(), Source: la, Addr: r.nc.RemoteAddr(), Err: err}
}

// peekWouldBlock peeks at one byte of socket fd without blocking and
// reports whether the peek would block. The peek is a raw system call, as
// rawIO's reads are.
func peekWouldBlock(fd uintptr) bool {
	var buf [1]byte
	_, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&buf[0])), 1,
		unix.MSG_PEEK|unix.MSG_DONTWAIT, 0, 0)
	return e == unix.EAGAIN
}
