package impair

import (
	"context"
	"errors"
	"fmt"
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

// piece returns how many of n bytes, handed over at the stream position,
// belong to the segment there: up to the next multiple of SegmentSize.
func (s *shaper) piece(n int) int {
	return int(min(uint64(n), SegmentSize-s.pos%SegmentSize))
}

// next schedules the segment at the stream position: the first k of n
// bytes handed over at now, k = s.piece(n), and returns k and when those
// bytes arrive. n = 0 is the end of the stream (a FIN), which takes the
// delay but no bandwidth. A segment is sent at the link's rate behind
// the bytes before it, then takes the delay, with jitter drawn by the
// position of its first byte; one that starts a lost segment (a multiple
// of SegmentSize) is a retransmission delay later. No arrival precedes an
// earlier one: the bytes behind a late segment wait for it.
func (s *shaper) next(now time.Time, n int) (int, time.Time) {
	l := s.link
	k := s.piece(n)
	start := now
	if k > 0 && l.Rate > 0 {
		if s.busy.After(start) {
			start = s.busy
		}
		// At most SegmentSize bytes at 1 bit/s: about 3 h, no overflow.
		start = start.Add(time.Duration(float64(k) * 8 * float64(time.Second) / float64(l.Rate)))
		s.busy = start
	}
	d := l.Delay
	if l.Jitter > 0 {
		d = max(addSat(d, time.Duration((2*s.draw(drawJitter, s.pos)-1)*float64(l.Jitter))), 0)
	}
	if k > 0 && l.Loss > 0 && s.pos%SegmentSize == 0 && s.draw(drawLoss, s.pos/SegmentSize) < l.Loss {
		d = addSat(d, s.rto)
	}
	s.pos += uint64(k)
	at := start.Add(d) // saturates
	if at.Before(s.last) {
		at = s.last
	}
	s.last = at
	return k, at
}

// addSat returns a + b, held within time.Duration's range.
func addSat(a, b time.Duration) time.Duration {
	switch {
	case b > 0 && a > math.MaxInt64-b:
		return math.MaxInt64
	case b < 0 && a < math.MinInt64-b:
		return math.MinInt64
	}
	return a + b
}

// segment is bytes in flight in one direction, or the end of the stream
// when b is empty: with err set in the down direction (what the
// underlying connection's Read returned), not in the up one (CloseWrite).
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
	ended    bool      // the end of the stream is queued: no more writes
	deadline time.Time // the waiting side's deadline (Read's or Write's)
	changed  chan struct{}
}

func newQueue() *queue { return &queue{changed: make(chan struct{})} }

// notify wakes every waiter. q.mu must be held.
func (q *queue) notify() {
	close(q.changed)
	q.changed = make(chan struct{})
}

func (q *queue) push(segs ...segment) {
	q.mu.Lock()
	q.segs = append(q.segs, segs...)
	for _, s := range segs {
		q.bytes += len(s.b)
	}
	q.notify()
	q.mu.Unlock()
}

// pop drops the first n segments. q.mu must be held.
func (q *queue) pop(n int) {
	for i := range n {
		q.bytes -= len(q.segs[i].b)
		q.segs[i] = segment{}
	}
	q.segs = q.segs[n:]
	q.notify()
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
// and bandwidth in each direction, segment by segment. Writes return once
// the bytes are queued, up to 4 MiB at a time, like a socket buffer: a
// larger write, or one behind a full queue, waits for room. Reads return
// bytes once they have arrived. Deadlines apply to those waits. Close
// drops the bytes still in flight and closes the underlying connection;
// as for any net.Conn, it must be called, even after the peer closed, to
// end the connection's two goroutines.
//
// Arrivals are timed with the runtime's timers, which on Linux wake up to
// about 1 ms late: the delays are as configured or up to that much longer.
type Conn struct {
	under      net.Conn
	up, down   *queue
	upS, downS *shaper
	rmu, wmu   sync.Mutex // one Read, one Write at a time; wmu guards upS
	rtm, wtm   *time.Timer
	sendErr    atomic.Pointer[error] // the underlying connection's write error
	closeOnce  sync.Once
	closeErr   error
	done       sync.WaitGroup
	synOnce    sync.Once
	synRTT     time.Duration // the simulated handshake's round trip
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
// connection: a dial that tries several addresses waits the same round
// trip for each. It runs before start.
func (c *Conn) handshake(ctx context.Context) error {
	c.synOnce.Do(func() {
		now := time.Now()
		_, syn := c.upS.next(now, 0)
		_, ack := c.downS.next(syn, 0)
		c.synRTT = ack.Sub(now)
	})
	tm := time.NewTimer(c.synRTT)
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

// errWriteClosed is Write's error after CloseWrite.
var errWriteClosed = fmt.Errorf("impair: write after CloseWrite: %w", net.ErrClosed)

// Write queues b for sending, segment by segment, behind the bytes before
// it. When the queue holds 4 MiB it waits for room; at the write
// deadline it returns how much it queued, with os.ErrDeadlineExceeded.
func (c *Conn) Write(b []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	q := c.up
	n := 0
	q.mu.Lock()
	for {
		switch {
		case q.closed:
			q.mu.Unlock()
			return n, net.ErrClosed
		case q.ended:
			q.mu.Unlock()
			return n, errWriteClosed
		case c.sendErr.Load() != nil:
			q.mu.Unlock()
			return n, *c.sendErr.Load()
		case !q.deadline.IsZero() && !time.Now().Before(q.deadline):
			q.mu.Unlock()
			return n, os.ErrDeadlineExceeded
		case len(b) == 0:
			q.mu.Unlock()
			return n, nil
		case q.bytes < maxQueued:
			room := maxQueued - q.bytes
			q.mu.Unlock()
			k := c.queueUp(b, room)
			n, b = n+k, b[k:]
			if len(b) == 0 {
				return n, nil
			}
			q.mu.Lock()
			continue
		}
		ch, dl := q.changed, q.deadline
		q.mu.Unlock()
		sleep(c.wtm, ch, dl)
		q.mu.Lock()
	}
}

// queueUp copies about room bytes of b (not empty) into the up queue,
// ending at a segment's end so that how b is cut into segments does not
// depend on the room, and returns how many it queued. c.wmu is held.
func (c *Conn) queueUp(b []byte, room int) int {
	s := c.upS
	size := min(len(b), room)
	if end := (s.pos + uint64(size)) % SegmentSize; end != 0 {
		size = min(len(b), size+int(SegmentSize-end))
	}
	buf := append([]byte(nil), b[:size]...)
	segs := make([]segment, 0, size/SegmentSize+2)
	now := time.Now()
	for off := 0; off < size; {
		k, at := s.next(now, size-off)
		segs = append(segs, segment{b: buf[off : off+k], at: at})
		off += k
	}
	c.up.push(segs...)
	return size
}

// CloseWrite half-closes the connection: the end of the stream is queued
// behind the bytes written before it, takes the up link's delay as they
// do, then the underlying connection's CloseWrite sends it. Writes after
// it fail; reads go on. The underlying connection must have a CloseWrite,
// as a *net.TCPConn has.
func (c *Conn) CloseWrite() error {
	if _, ok := c.under.(closeWriter); !ok {
		return fmt.Errorf("impair: %T has no CloseWrite", c.under)
	}
	q := c.up
	q.mu.Lock()
	switch {
	case q.closed:
		q.mu.Unlock()
		return net.ErrClosed
	case q.ended:
		q.mu.Unlock()
		return nil
	}
	q.ended = true
	q.notify() // a Write waiting for room gives up
	q.mu.Unlock()
	c.wmu.Lock()
	_, at := c.upS.next(time.Now(), 0)
	c.wmu.Unlock()
	q.push(segment{at: at})
	return nil
}

// closeWriter is a connection that can be half-closed.
type closeWriter interface{ CloseWrite() error }

// send writes the up queue's segments to the underlying connection as
// they arrive, those arrived together in one write where their bytes are
// contiguous, and half-closes it at the end of the stream.
func (c *Conn) send() {
	defer c.done.Done()
	q := c.up
	tm := stoppedTimer()
	var out [][]byte
	for {
		q.mu.Lock()
		if q.closed {
			q.mu.Unlock()
			return
		}
		now := time.Now()
		if len(q.segs) == 0 || now.Before(q.segs[0].at) {
			ch := q.changed
			var at time.Time
			if len(q.segs) > 0 {
				at = q.segs[0].at
			}
			q.mu.Unlock()
			sleep(tm, ch, at)
			continue
		}
		if len(q.segs[0].b) == 0 { // the end of the stream
			q.pop(1)
			q.mu.Unlock()
			if err := c.under.(closeWriter).CloseWrite(); err != nil {
				c.sendErr.Store(&err)
			}
			continue
		}
		out = out[:0]
		n := 0
		for ; n < len(q.segs) && len(q.segs[n].b) > 0 && !now.Before(q.segs[n].at); n++ {
			out = appendContiguous(out, q.segs[n].b)
		}
		q.mu.Unlock()
		var err error
		for _, b := range out {
			if _, err = c.under.Write(b); err != nil {
				break
			}
		}
		clear(out)
		q.mu.Lock()
		q.pop(n)
		if err != nil {
			c.sendErr.Store(&err)
		}
		q.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// appendContiguous appends b to out, extending out's last slice instead
// when b's bytes follow its bytes in memory.
func appendContiguous(out [][]byte, b []byte) [][]byte {
	if i := len(out) - 1; i >= 0 {
		if p := out[i]; len(p) < cap(p) && &p[:len(p)+1][len(p)] == &b[0] && len(b) <= cap(p)-len(p) {
			out[i] = p[:len(p)+len(b)]
			return out
		}
	}
	return append(out, b)
}

// receive reads the underlying connection and queues what it reads,
// segment by segment, to arrive after the down link's delay; the end of
// the stream (or an error) arrives the same way.
func (c *Conn) receive() {
	defer c.done.Done()
	q := c.down
	buf := make([]byte, readSize)
	var segs []segment
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
		segs = segs[:0]
		b := append([]byte(nil), buf[:n]...)
		for off := 0; off < n; {
			k, at := c.downS.next(now, n-off)
			segs = append(segs, segment{b: b[off : off+k], at: at})
			off += k
		}
		if err != nil {
			_, at := c.downS.next(now, 0)
			segs = append(segs, segment{err: err, at: at})
		}
		q.push(segs...)
		clear(segs)
		if err != nil {
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
