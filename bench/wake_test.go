package bench

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestClockMoves: the real clock moves between reads; a testing/synctest
// bubble's stands still, and a pool made in one has no wakers (a worker
// waiting on a descriptor would keep the bubble's clock from moving).
func TestClockMoves(t *testing.T) {
	assert.True(t, clockMoves())
	synctest.Test(t, func(t *testing.T) {
		assert.False(t, clockMoves())
		assert.False(t, newPool(nil, 1).wakers)
	})
}

// TestWakerSignalsBeforeAndDuringTheWait: a signal before the wait ends it
// at once, one wait consumes every signal before it (the next parks), and
// a signal wakes a parked wait.
func TestWakerSignalsBeforeAndDuringTheWait(t *testing.T) {
	wk, err := newWaker()
	if err != nil {
		t.Skipf("no waker on this system: %v", err)
	}
	defer wk.close()
	wk.signal()
	wk.signal()
	wk.signal()
	require.NoError(t, within(t, time.Second, wk.wait), "a wait after three signals")
	woke := make(chan error, 1)
	go func() { woke <- wk.wait() }()
	select {
	case err := <-woke:
		t.Fatalf("a wait after the signals were consumed did not park: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	wk.signal()
	select {
	case err := <-woke:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("a signal did not wake the parked wait")
	}
}

// within runs f, failing the test when it takes longer than d.
func within(t *testing.T, d time.Duration, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("still running after %v", d)
		return nil
	}
}

// TestWorkerOnItsWaker: a worker waiting on its waker gets every send it
// is handed, in order, and ends when its channel is closed: after its
// last send is done, and also when the send and the close come before it
// looks (their two signals then wake it once).
func TestWorkerOnItsWaker(t *testing.T) {
	for _, onWaker := range []bool{true, false} {
		wk, err := newWaker()
		if err != nil {
			t.Skipf("no waker on this system: %v", err)
		}
		w := &worker{in: make(chan job, 1), wk: wk, onWaker: onWaker}
		got := make(chan int)
		done := make(chan struct{})
		go func() {
			defer close(done)
			k := w.wk
			for {
				j, ok := w.next(&k)
				if !ok {
					return
				}
				got <- j.i
			}
		}()
		for i := range 200 {
			if i%50 == 0 {
				time.Sleep(2 * time.Millisecond) // the worker parks
			}
			w.hand(job{i: i})
			select {
			case g := <-got:
				require.Equal(t, i, g, "onWaker %v", onWaker)
			case <-time.After(5 * time.Second):
				t.Fatalf("onWaker %v: send %d never reached the worker", onWaker, i)
			}
		}
		// The last send and the close, handed at once.
		w.hand(job{i: 200})
		close(w.in)
		wk.signal()
		select {
		case g := <-got:
			require.Equal(t, 200, g)
		case <-time.After(5 * time.Second):
			t.Fatalf("onWaker %v: the send before the close never reached the worker", onWaker)
		}
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("onWaker %v: the worker did not end when its channel closed", onWaker)
		}
		wk.close()
	}
}

// TestPoolCapsItsWakers: past maxWakers workers, new ones have none (a
// descriptor each), and closing the pool ends every worker, idle on its
// waker or its channel.
func TestPoolCapsItsWakers(t *testing.T) {
	wk, err := newWaker()
	if err != nil {
		t.Skipf("no waker on this system: %v", err)
	}
	wk.close()
	p := newPool(nil, maxWakers+10)
	require.True(t, p.wakers)
	with := 0
	for range maxWakers + 10 {
		w := p.get(t.Context())
		require.NotNil(t, w)
		if w.wk != nil {
			with++
		}
	}
	assert.Equal(t, maxWakers, with)
	require.NoError(t, within(t, 10*time.Second, func() error { p.close(); return nil }))
}
