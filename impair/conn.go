package impair

import (
	"context"
	"errors"
	"math"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// maxQueued bounds the bytes waiting in one direction of a connection,
// like a socket buffer: a writer blocks, and the reader of the underlying
// connection pauses, until the queue drains below it.
const maxQueued = 4 << 20

// readSize is the most the reading side takes from the underlying
// connection at a time.
const readSize = 32 << 10

// shaper computes when the bytes handed to one direction arrive at its
// far end. It is used by one goroutine at a time.
type shaper struct {
	link         Link
	rto          time.Duration
	seed, stream uint64
	pos          uint64    // bytes handed over so far: the stream position
	busy         time.Time // when the link has sent what it was given
	last         time.Time // the latest arrival scheduled: arrivals keep their order
}

func newShaper(l Link, rto time.Duration, seed, stream uint64) *shaper {
	return &shaper{link: l, rto: rto, seed: seed, stream: stream}
}

// Kinds of draw, so that jitter and loss draw apart.
const (
	drawJitter = 1
	drawLoss   = 2
)

// draw returns a uniform value in [0, 1) for the kind of draw at stream
// position i: a hash of the seed, the connection's stream, the kind and
// the position, so that the draws do not depend on how the bytes were
// split into writes or reads.
func (s *shaper) draw(kind, i uint64) float64 {
	x := s.seed ^ mix(s.stream*4+kind) ^ mix(i+0x632be59bd9b4e019)
	return float64(mix(x)>>11) / (1 << 53)
}

// mix is SplitMix64's finalizer.
func mix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// maxWait caps a computed delay, so that absurd sizes or rates cannot
// overflow a time.Duration: about 146 years.
const maxWait = time.Duration(math.MaxInt64 / 2)

// arrival returns when n bytes handed over at now arrive; n = 0 is the
// end of the stream (a FIN), which takes the delay but no bandwidth. The
// jitter is drawn by the position of the write's first byte; a write of
// which any segment (by its first byte's position) is lost arrives one
// retransmission delay late: TCP recovers the losses of one window
// together, not one after another.
func (s *shaper) arrival(now time.Time, n int) time.Time {
	l := s.link
	start := now
	if n > 0 && l.Rate > 0 {
		if s.busy.After(start) {
			start = s.busy
		}
		ser := float64(n) * 8 * float64(time.Second) / float64(l.Rate)
		start = start.Add(time.Duration(min(ser, float64(maxWait))))
		s.busy = start
	}
	d := l.Delay
	if l.Jitter > 0 {
		d += time.Duration((2*s.draw(drawJitter, s.pos) - 1) * float64(l.Jitter))
		d = max(d, 0)
	}
	if l.Loss > 0 && n > 0 {
		first := (s.pos + SegmentSize - 1) / SegmentSize // the first segment starting in the write
		for seg := first; seg*SegmentSize < s.pos+uint64(n); seg++ {
			if s.draw(drawLoss, seg) < l.Loss {
				d += s.rto
				break
			}
		}
	}
	s.pos += uint64(n)
	at := start.Add(d)
	if at.Before(s.last) {
		at = s.last
	}
	s.last = at
	return at
}

// segment is bytes in flight in one direction, or the end of the stream
// (err set) when b is empty.
type segment struct {
	b   []byte
	at  time.Time
	err error
}

// queue is one direction's bytes in flight. mu guards all; changed is
// closed and replaced whenever something a waiter waits for changes.
type queue struct {
	mu       sync.Mutex
	segs     []segment
	bytes    int
	closed   bool
	deadline time.Time // the waiting side's deadline (Read's or Write's)
	changed  chan struct{}
}

func newQueue() *queue { return &queue{changed: make(chan struct{})} }

// notify wakes every waiter. q.mu must be held.
func (q *queue) notify() {
	close(q.changed)
	q.changed = make(chan struct{})
}

func (q *queue) push(s segment) {
	q.mu.Lock()
	q.segs = append(q.segs, s)
	q.bytes += len(s.b)
	q.notify()
	q.mu.Unlock()
}

func (q *queue) setDeadline(t time.Time) {
	q.mu.Lock()
	q.deadline = t
	q.notify()
	q.mu.Unlock()
}

func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.notify()
	q.mu.Unlock()
}

// sleep waits until ch is closed or until t (when t is not zero), on tm.
func sleep(tm *time.Timer, ch <-chan struct{}, t time.Time) {
	if t.IsZero() {
		<-ch
		return
	}
	tm.Reset(time.Until(t))
	select {
	case <-ch:
	case <-tm.C:
	}
	tm.Stop()
}

// earliest returns the earlier of two times, a zero one being "never".
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// Conn is a net.Conn whose bytes take the profile's delay, jitter, loss
// and bandwidth in each direction. Writes return once the bytes are queued
// (up to 4 MiB, like a socket buffer); reads return bytes once they have
// arrived. Deadlines apply to those waits. Close drops the bytes still in
// flight and closes the underlying connection; as for any net.Conn, it
// must be called, even after the peer closed, to end the connection's
// two goroutines.
//
// Arrivals are timed with the runtime's timers, which on Linux wake up to
// about 1 ms late: the delays are as configured or up to that much longer.
type Conn struct {
	under      net.Conn
	up, down   *queue
	upS, downS *shaper
	rmu, wmu   sync.Mutex // one Read, one Write at a time
	rtm, wtm   *time.Timer
	sendErr    atomic.Pointer[error] // the underlying connection's write error
	closeOnce  sync.Once
	closeErr   error
	done       sync.WaitGroup
	synOnce    sync.Once
	synAck     time.Time // when the simulated handshake completes
}

// Conn wraps c, an established connection. seed picks the connection's
// draws: use different seeds for different connections of one run (a
// Dialer does).
func (p Profile) Conn(c net.Conn, seed uint64) *Conn {
	ic := p.newConn(c, seed)
	ic.start()
	return ic
}

func (p Profile) newConn(c net.Conn, seed uint64) *Conn {
	return &Conn{
		under: c,
		up:    newQueue(), down: newQueue(),
		upS:   newShaper(p.Up, p.rto(), p.Seed, 2*seed),
		downS: newShaper(p.Down, p.rto(), p.Seed, 2*seed+1),
		rtm:   stoppedTimer(), wtm: stoppedTimer(),
	}
}

func (c *Conn) start() {
	c.done.Add(2)
	go c.send()
	go c.receive()
}

// handshake waits for a TCP handshake's round trip through the links: the
// SYN's way up and the SYN-ACK's way down. It is drawn once per
// connection: a dial that tries several addresses waits the same time for
// each. It runs before start.
func (c *Conn) handshake(ctx context.Context) error {
	c.synOnce.Do(func() { c.synAck = c.downS.arrival(c.upS.arrival(time.Now(), 0), 0) })
	tm := time.NewTimer(time.Until(c.synAck))
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func stoppedTimer() *time.Timer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}

// Write queues b for sending after the up link's delay.
func (c *Conn) Write(b []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	q := c.up
	q.mu.Lock()
	for {
		switch {
		case q.closed:
			q.mu.Unlock()
			return 0, net.ErrClosed
		case c.sendErr.Load() != nil:
			q.mu.Unlock()
			return 0, *c.sendErr.Load()
		case !q.deadline.IsZero() && !time.Now().Before(q.deadline):
			q.mu.Unlock()
			return 0, os.ErrDeadlineExceeded
		}
		if q.bytes < maxQueued || len(b) == 0 {
			break
		}
		ch, dl := q.changed, q.deadline
		q.mu.Unlock()
		sleep(c.wtm, ch, dl)
		q.mu.Lock()
	}
	q.mu.Unlock()
	if len(b) == 0 {
		return 0, nil
	}
	seg := segment{b: append([]byte(nil), b...)}
	seg.at = c.upS.arrival(time.Now(), len(b))
	q.push(seg)
	return len(b), nil
}

// send writes the up queue's segments to the underlying connection as
// they arrive.
func (c *Conn) send() {
	defer c.done.Done()
	q := c.up
	tm := stoppedTimer()
	for {
		q.mu.Lock()
		if q.closed {
			q.mu.Unlock()
			return
		}
		if len(q.segs) == 0 || time.Now().Before(q.segs[0].at) {
			ch := q.changed
			var at time.Time
			if len(q.segs) > 0 {
				at = q.segs[0].at
			}
			q.mu.Unlock()
			sleep(tm, ch, at)
			continue
		}
		s := q.segs[0]
		q.mu.Unlock()
		_, err := c.under.Write(s.b)
		q.mu.Lock()
		q.segs[0] = segment{}
		q.segs = q.segs[1:]
		q.bytes -= len(s.b)
		if err != nil {
			c.sendErr.Store(&err)
		}
		q.notify()
		q.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// receive reads the underlying connection and queues what it reads to
// arrive after the down link's delay; the end of the stream (or an error)
// arrives the same way.
func (c *Conn) receive() {
	defer c.done.Done()
	q := c.down
	buf := make([]byte, readSize)
	for {
		q.mu.Lock()
		for q.bytes >= maxQueued && !q.closed {
			ch := q.changed
			q.mu.Unlock()
			<-ch
			q.mu.Lock()
		}
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return
		}
		n, err := c.under.Read(buf)
		now := time.Now()
		if n > 0 {
			q.push(segment{b: append([]byte(nil), buf[:n]...), at: c.downS.arrival(now, n)})
		}
		if err != nil {
			q.push(segment{err: err, at: c.downS.arrival(now, 0)})
			return
		}
	}
}

// Read returns bytes that have arrived, waiting for them if none has.
func (c *Conn) Read(b []byte) (int, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	q := c.down
	q.mu.Lock()
	defer q.mu.Unlock()
	for {
		now := time.Now()
		switch {
		case q.closed:
			return 0, net.ErrClosed
		case !q.deadline.IsZero() && !now.Before(q.deadline):
			return 0, os.ErrDeadlineExceeded
		case len(b) == 0:
			return 0, nil
		case len(q.segs) > 0 && !now.Before(q.segs[0].at):
			return c.take(b, now)
		}
		var at time.Time
		if len(q.segs) > 0 {
			at = q.segs[0].at
		}
		ch, wake := q.changed, earliest(at, q.deadline)
		q.mu.Unlock()
		sleep(c.rtm, ch, wake)
		q.mu.Lock()
	}
}

// take copies into b what has arrived by now, from the head of the down
// queue (not empty, its head arrived). c.down.mu is held.
func (c *Conn) take(b []byte, now time.Time) (int, error) {
	q := c.down
	n := 0
	for len(q.segs) > 0 && n < len(b) && !now.Before(q.segs[0].at) {
		s := &q.segs[0]
		if len(s.b) == 0 {
			if n > 0 {
				break // the end of the stream comes with the next Read
			}
			return 0, s.err
		}
		k := copy(b[n:], s.b)
		n += k
		q.bytes -= k
		s.b = s.b[k:]
		if len(s.b) == 0 {
			q.segs[0] = segment{}
			q.segs = q.segs[1:]
		}
	}
	if n > 0 {
		q.notify() // room for the reading goroutine
	}
	return n, nil
}

// LocalAddr returns the underlying connection's local address.
func (c *Conn) LocalAddr() net.Addr { return c.under.LocalAddr() }

// RemoteAddr returns the underlying connection's remote address.
func (c *Conn) RemoteAddr() net.Addr { return c.under.RemoteAddr() }

// SetDeadline sets both deadlines.
func (c *Conn) SetDeadline(t time.Time) error {
	c.up.setDeadline(t)
	c.down.setDeadline(t)
	return nil
}

// SetReadDeadline sets the deadline of Read's wait for arrived bytes.
func (c *Conn) SetReadDeadline(t time.Time) error {
	c.down.setDeadline(t)
	return nil
}

// SetWriteDeadline sets the deadline of Write's wait for room in the
// queue.
func (c *Conn) SetWriteDeadline(t time.Time) error {
	c.up.setDeadline(t)
	return nil
}

// Close drops the bytes in flight, closes the underlying connection and
// waits for the connection's goroutines to end.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.up.close()
		c.down.close()
		c.closeErr = c.under.Close()
		c.done.Wait()
	})
	return c.closeErr
}

// DialFunc is the dial function of http.Transport.DialContext and
// net.Dialer.DialContext.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// DefaultDialer is the dialer Dialer and Transport use when given none:
// http.DefaultTransport's settings.
func DefaultDialer() *net.Dialer {
	return &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
}

// Dialer returns a DialFunc that dials with a copy of d (DefaultDialer
// when nil) and impairs every connection it makes; the n-th connection
// draws from (p.Seed, n). Connecting takes a round trip through the links,
// as a TCP handshake does: it is waited between the socket's creation and
// its connect, in the dialer's ControlContext (after d's own Control or
// ControlContext), so that httptrace's ConnectStart–ConnectDone holds it.
// A context that ends during the wait ends the dial with its error. A zero
// profile dials with d unimpaired.
func (p Profile) Dialer(d *net.Dialer) DialFunc {
	if d == nil {
		d = DefaultDialer()
	}
	base := *d
	if p.IsZero() {
		return base.DialContext
	}
	var n atomic.Uint64
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c := p.newConn(nil, n.Add(1)-1)
		dd := base
		dd.Control, dd.ControlContext = nil, func(ctx context.Context, network, address string, rc syscall.RawConn) error {
			switch {
			case base.ControlContext != nil:
				if err := base.ControlContext(ctx, network, address, rc); err != nil {
					return err
				}
			case base.Control != nil:
				if err := base.Control(network, address, rc); err != nil {
					return err
				}
			}
			return c.handshake(ctx)
		}
		raw, err := dd.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		c.under = raw
		c.start()
		return c, nil
	}
}

// Transport returns a clone of base (http.DefaultTransport when nil)
// whose connections are impaired: its DialContext is replaced by
// p.Dialer(d). TLS runs over the impaired connection, so its handshake
// takes the delays too. base must not dial through a DialTLSContext of its
// own, which would bypass the impairment: Transport refuses one.
func (p Profile) Transport(base *http.Transport, d *net.Dialer) (*http.Transport, error) {
	if base == nil {
		base = http.DefaultTransport.(*http.Transport)
	}
	//lint:ignore SA1019 a deprecated DialTLS still bypasses the dialer
	if base.DialTLSContext != nil || base.DialTLS != nil {
		return nil, errors.New("impair: the transport dials TLS itself (DialTLSContext), which would bypass the impairment")
	}
	t := base.Clone()
	t.DialContext = p.Dialer(d)
	return t, nil
}
