package bench

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// timerFD is a fineTimer on a Linux timerfd: a non-blocking descriptor in
// the runtime's poller, so a wait parks the goroutine, and the timer's
// expiry wakes it as precisely as the kernel's high-resolution timers
// (no timer slack applies to a timerfd).
type timerFD struct {
	fd  int
	f   *os.File // the descriptor in the runtime's poller
	buf [8]byte
}

func newFineTimer() (fineTimer, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	return &timerFD{fd: fd, f: os.NewFile(uintptr(fd), "timerfd")}, nil
}

func (t *timerFD) wait(d time.Duration) error {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(max(int64(d), 1))}
	if err := unix.TimerfdSettime(t.fd, 0, &spec, nil); err != nil {
		return err
	}
	_, err := t.f.Read(t.buf[:]) // the expirations count
	return err
}

func (t *timerFD) close() { _ = t.f.Close() }
