package bench

import (
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// timerFD is a fineTimer on a Linux timerfd: a non-blocking descriptor in
// the runtime's poller, so a wait parks the goroutine, and the timer's
// expiry wakes it as precisely as the kernel's high-resolution timers
// (no timer slack applies to a timerfd).
type timerFD struct {
	fd  int
	f   *os.File        // the descriptor in the runtime's poller
	rc  syscall.RawConn // f's, to read it without entering a system call
	buf [8]byte
	// spec is the wait's timer setting (a field: one on the stack would
	// escape through the system call's pointer).
	spec unix.ItimerSpec
	// read is readExpiry, made once (a method value per wait would be an
	// allocation), and rerr its error.
	read func(fd uintptr) bool
	rerr error
}

func newFineTimer() (fineTimer, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "timerfd")
	rc, err := f.SyscallConn()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	t := &timerFD{fd: fd, f: f, rc: rc}
	t.read = t.readExpiry
	return t, nil
}

// wait arms the timer and parks until it expires. It arms it and reads
// the expirations count with raw system calls: neither blocks (the
// timerfd is non-blocking), so neither need tell the runtime it enters a
// system call (which wakes the runtime's monitor thread, on every wait).
// The read comes first: an expiry before the wait began is not signalled
// again.
func (t *timerFD) wait(d time.Duration) error {
	t.spec = unix.ItimerSpec{Value: unix.NsecToTimespec(max(int64(d), 1))}
	if _, _, e := unix.RawSyscall6(unix.SYS_TIMERFD_SETTIME, uintptr(t.fd), 0, uintptr(unsafe.Pointer(&t.spec)), 0, 0, 0); e != 0 {
		return e
	}
	t.rerr = nil
	if err := t.rc.Read(t.read); err != nil {
		return err
	}
	return t.rerr
}

// readExpiry is wait's RawConn.Read callback: it reads the expirations
// count, or asks to wait when the timer has not expired yet.
func (t *timerFD) readExpiry(fd uintptr) bool {
	_, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&t.buf[0])), uintptr(len(t.buf)))
	switch e {
	case 0:
		return true
	case unix.EAGAIN, unix.EINTR:
		return false // not yet: wait for the expiry
	default:
		t.rerr = e
		return true
	}
}

func (t *timerFD) close() { _ = t.f.Close() }
