package bench

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// timerFD is a fineTimer on a Linux timerfd in the runtime's poller, so a
// wait parks the goroutine, and the timer's expiry wakes it as precisely
// as the kernel's high-resolution timers (no timer slack applies to a
// timerfd).
type timerFD struct {
	*pollCounter // the expirations count
	// spec is the wait's timer setting (a field: one on the stack would
	// escape through the system call's pointer).
	spec unix.ItimerSpec
}

func newFineTimer() (fineTimer, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	c, err := newPollCounter(fd, "timerfd")
	if err != nil {
		return nil, err
	}
	return &timerFD{pollCounter: c}, nil
}

// wait arms the timer and parks until it expires. It arms it with a raw
// system call, as it reads the count (see pollCounter): neither blocks.
func (t *timerFD) wait(d time.Duration) error {
	t.spec = unix.ItimerSpec{Value: unix.NsecToTimespec(max(int64(d), 1))}
	if _, _, e := unix.RawSyscall6(unix.SYS_TIMERFD_SETTIME, uintptr(t.fd), 0, uintptr(unsafe.Pointer(&t.spec)), 0, 0, 0); e != 0 {
		return e
	}
	return t.pollCounter.wait()
}
