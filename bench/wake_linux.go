package bench

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// eventWaker is a waker on a Linux eventfd in the runtime's poller. A
// worker parked on it is woken by the poller (the thread that waits in
// it, or the next to look), not by the signalling goroutine: a channel
// send to a parked goroutine readies it and wakes a second thread to run
// it (runtime.wakep), on every send, and that wake and the thread's
// sleep after it were most of the open loop's context switches. The
// signal, like the wait's read (see pollCounter), is a raw system call
// that never blocks.
type eventWaker struct {
	*pollCounter // the signals' count: wait consumes every signal before it
	// one is the signal's count (a field: one on the stack would escape
	// through the system call's pointer).
	one [8]byte
}

func newWaker() (waker, error) {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	c, err := newPollCounter(fd, "eventfd")
	if err != nil {
		return nil, err
	}
	e := &eventWaker{pollCounter: c}
	*(*uint64)(unsafe.Pointer(&e.one[0])) = 1 // the eventfd's count is in the host's byte order
	return e, nil
}

// signal adds one to the eventfd's count, which makes it readable.
func (e *eventWaker) signal() {
	// The count cannot overflow (it would take 2^64-1 signals unread), so
	// the write's only error is a closed descriptor, after close.
	_, _, _ = unix.RawSyscall(unix.SYS_WRITE, uintptr(e.fd), uintptr(unsafe.Pointer(&e.one[0])), uintptr(len(e.one)))
}
