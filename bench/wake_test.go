package bench

import (
	"context"
	"sync/atomic"
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
		assert.False(t, newPool(context.Background(), nil, 1).wakers)
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
			w.hand(job{i: i}, nil)
			select {
			case g := <-got:
				require.Equal(t, i, g, "onWaker %v", onWaker)
			case <-time.After(5 * time.Second):
				t.Fatalf("onWaker %v: send %d never reached the worker", onWaker, i)
			}
		}
		// The last send and the close, handed at once.
		w.hand(job{i: 200}, nil)
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
	p := newPool(context.Background(), nil, maxWakers+10)
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

// countWaker is a waker that counts its signals and never parks.
type countWaker struct{ n atomic.Int32 }

func (c *countWaker) signal()     { c.n.Add(1) }
func (c *countWaker) wait() error { return nil }
func (c *countWaker) close()      {}

func onWaker() *worker {
	return &worker{in: make(chan job, 1), wk: &countWaker{}, onWaker: true}
}

func signals(w *worker) int32 { return w.wk.(*countWaker).n.Load() }

// TestHandAfter: a send handed after another in the same wake is
// signalled by the worker before it as that one takes its send, not by
// the hand; if that one took it already, the hand signals. A worker on
// its channel is never chained, nor one to itself (come idle and handed
// the next send), and a new hand clears what a worker follows.
func TestHandAfter(t *testing.T) {
	a, b, c := onWaker(), onWaker(), onWaker()
	a.hand(job{i: 1}, nil)
	assert.Equal(t, int32(1), signals(a))
	b.hand(job{i: 2}, a)
	assert.Zero(t, signals(b), "b signalled before a took its send")
	<-a.in
	a.took()
	assert.Equal(t, int32(1), signals(b), "a took its send and did not signal b")
	<-b.in
	b.took()

	c.hand(job{i: 3}, a) // a took its send already
	assert.Equal(t, int32(1), signals(c), "c waited on a, which had taken its send")
	<-c.in
	c.took()

	a.hand(job{i: 4}, nil)
	assert.Nil(t, a.then.Load(), "a new hand left a's follower")
	<-a.in
	a.took()
	a.hand(job{i: 6}, a) // a came idle and is handed the next send too
	assert.Equal(t, int32(3), signals(a), "a, handed the send after its own, was left to signal itself")
	<-a.in
	a.took()
	a.hand(job{i: 7}, nil)
	d := onWaker()
	d.onWaker = false // on its channel: the channel send wakes it
	d.hand(job{i: 5}, a)
	assert.Nil(t, a.then.Load(), "a worker on its channel was chained")
	assert.Zero(t, signals(d))
	<-a.in
	a.took()
	assert.Zero(t, signals(d))
}

// TestHandAfterDelivers: bursts of sends handed one after another to
// workers on real wakers, each chained to the one before, all reach
// their workers, whichever takes its send first.
func TestHandAfterDelivers(t *testing.T) {
	if wk, err := newWaker(); err != nil {
		t.Skipf("no waker on this system: %v", err)
	} else {
		wk.close()
	}
	p := newPool(context.Background(), nil, 64)
	require.True(t, p.wakers)
	const n = 16
	ws := make([]*worker, n)
	got := make(chan int, n)
	for i := range ws {
		wk, err := newWaker()
		require.NoError(t, err)
		w := &worker{in: make(chan job, 1), wk: wk, onWaker: true}
		ws[i] = w
		p.idle = append(p.idle, w)
		p.wg.Go(func() { // pool.run, its call aside
			k := w.wk
			for {
				j, ok := w.next(&k)
				if !ok {
					return
				}
				w.took()
				got <- j.i
				p.mu.Lock()
				w.onWaker = k != nil
				p.idle = append(p.idle, w)
				p.mu.Unlock()
			}
		})
	}
	p.all = ws
	for burst := range 50 {
		// Every worker idle (as pool.get takes them: under the lock).
		for try := 0; ; try++ {
			require.Less(t, try, 5000, "burst %d: the workers did not come idle", burst)
			p.mu.Lock()
			idle := len(p.idle) == n
			if idle {
				p.idle = p.idle[:0]
			}
			p.mu.Unlock()
			if idle {
				break
			}
			time.Sleep(time.Millisecond)
		}
		var last *worker
		for i, w := range ws {
			w.hand(job{i: burst*n + i}, last)
			last = w
		}
		for seen := 0; seen < n; seen++ {
			select {
			case <-got:
			case <-time.After(5 * time.Second):
				t.Fatalf("burst %d: %d of %d sends reached their workers", burst, seen, n)
			}
		}
	}
	require.NoError(t, within(t, 10*time.Second, func() error { p.close(); return nil }))
}

// TestComeIdleCrowded: a worker with a waker that comes idle waits on it,
// but on its channel while the sends are crowded; one without a waker
// always on its channel; each is idle again, and frees a waiting
// dispatcher.
func TestComeIdleCrowded(t *testing.T) {
	p := newPool(context.Background(), nil, 4)
	w := onWaker()
	p.comeIdle(w, true)
	assert.True(t, w.onWaker)
	p.setCrowded(true)
	p.idle = p.idle[:0]
	p.comeIdle(w, true)
	assert.False(t, w.onWaker, "crowded, the worker waits on its waker")
	p.setCrowded(false)
	p.idle = p.idle[:0]
	p.waiting = true
	p.comeIdle(w, false)
	assert.False(t, w.onWaker, "a worker with no waker")
	assert.Equal(t, []*worker{w}, p.idle)
	select {
	case <-p.free:
	default:
		t.Fatal("the waiting dispatcher was not freed")
	}
}
