package bench

import (
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// pollCounter is a non-blocking Linux descriptor that reads as an 8-byte
// count (a timerfd's expirations, an eventfd's signals), in the runtime's
// poller: wait parks the goroutine, not its thread, until the count is
// above zero, and reads (so resets) it. The read is a raw system call:
// it never blocks, so it need not tell the runtime it enters one (which
// wakes the runtime's monitor thread).
type pollCounter struct {
	fd  int
	f   *os.File        // the descriptor in the runtime's poller
	rc  syscall.RawConn // f's, to read it without entering a system call
	buf [8]byte
	// read is readCount, made once (a method value per wait would be an
	// allocation), and rerr its error.
	read func(fd uintptr) bool
	rerr error
}

// newPollCounter puts fd, non-blocking, in the runtime's poller; on an
// error fd is closed.
func newPollCounter(fd int, name string) (*pollCounter, error) {
	f := os.NewFile(uintptr(fd), name)
	rc, err := f.SyscallConn()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	c := &pollCounter{fd: fd, f: f, rc: rc}
	c.read = c.readCount
	return c, nil
}

// wait parks until the count is above zero, and resets it. The read
// comes first: a count that rose before the wait began is not signalled
// again.
func (c *pollCounter) wait() error {
	c.rerr = nil
	if err := c.rc.Read(c.read); err != nil {
		return err
	}
	return c.rerr
}

// readCount is wait's RawConn.Read callback: it reads the count, or asks
// to wait when it is zero.
func (c *pollCounter) readCount(fd uintptr) bool {
	_, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&c.buf[0])), uintptr(len(c.buf)))
	switch e {
	case 0:
		return true
	case unix.EAGAIN, unix.EINTR:
		return false // zero yet: wait
	default:
		c.rerr = e
		return true
	}
}

func (c *pollCounter) close() { _ = c.f.Close() }
