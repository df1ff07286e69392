package bench

import (
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// eventWaker is a waker on a Linux eventfd in the runtime's poller. A
// worker parked on it is woken by the poller (the thread that waits in
// it, or the next to look), not by the signalling goroutine: a channel
// send to a parked goroutine readies it and wakes a second thread to run
// it (runtime.wakep), on every send, and that wake and the thread's
// sleep after it were most of the open loop's context switches. Both
// calls are raw system calls: neither blocks (the eventfd is
// non-blocking), so neither need tell the runtime it enters one.
type eventWaker struct {
	fd int
	f  *os.File        // the descriptor in the runtime's poller
	rc syscall.RawConn // f's, to read it without entering a system call
	// buf is the read's count and one the write's (fields: ones on the
	// stack would escape through the system call's pointer).
	buf, one [8]byte
	// read is readCount, made once (a method value per wait would be an
	// allocation), and rerr its error.
	read func(fd uintptr) bool
	rerr error
}

func newWaker() (waker, error) {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "eventfd")
	rc, err := f.SyscallConn()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	e := &eventWaker{fd: fd, f: f, rc: rc}
	*(*uint64)(unsafe.Pointer(&e.one[0])) = 1 // the eventfd's count is in the host's byte order
	e.read = e.readCount
	return e, nil
}

// signal adds one to the eventfd's count, which makes it readable.
func (e *eventWaker) signal() {
	// The count cannot overflow (it would take 2^64-1 signals unread), so
	// the write's only error is a closed descriptor, after close.
	_, _, _ = unix.RawSyscall(unix.SYS_WRITE, uintptr(e.fd), uintptr(unsafe.Pointer(&e.one[0])), uintptr(len(e.one)))
}

// wait parks until the count is above zero, and resets it: one wait
// consumes every signal before it.
func (e *eventWaker) wait() error {
	e.rerr = nil
	if err := e.rc.Read(e.read); err != nil {
		return err
	}
	return e.rerr
}

// readCount is wait's RawConn.Read callback: it reads (and so resets) the
// count, or asks to wait when it is zero.
func (e *eventWaker) readCount(fd uintptr) bool {
	_, _, errno := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&e.buf[0])), uintptr(len(e.buf)))
	switch errno {
	case 0:
		return true
	case unix.EAGAIN, unix.EINTR:
		return false // not signalled yet: wait
	default:
		e.rerr = errno
		return true
	}
}

func (e *eventWaker) close() { _ = e.f.Close() }
