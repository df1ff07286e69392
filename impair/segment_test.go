package impair_test

import (
	"io"
	"net"
	"os"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/impair"
)

// TestRateDeliversALargeWriteSegmentBySegment writes two segments at once
// through an 8 kbit/s link: the first arrives once it has crossed the
// link, not once the whole write has.
func TestRateDeliversALargeWriteSegmentBySegment(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := impair.Profile{Up: impair.Link{Delay: 5 * time.Millisecond, Rate: 8000}} // 1 byte/ms
		c, srv := pipe(t, p)
		t0 := time.Now()
		_, err := c.Write(make([]byte, 2*impair.SegmentSize))
		require.NoError(t, err)
		_, at1 := readAt(t, srv, impair.SegmentSize)
		_, at2 := readAt(t, srv, impair.SegmentSize)
		assert.Equal(t, 1448*time.Millisecond+5*time.Millisecond, at1.Sub(t0), "the first segment")
		assert.Equal(t, 2896*time.Millisecond+5*time.Millisecond, at2.Sub(t0), "the second, behind it")
	})
}

// TestRateDownstreamIsPaidSegmentBySegment sends four segments down in
// one write and in four: either way each segment arrives once it has
// crossed the link, not once the whole read of the underlying connection
// has.
func TestRateDownstreamIsPaidSegmentBySegment(t *testing.T) {
	p := impair.Profile{Down: impair.Link{Delay: 5 * time.Millisecond, Rate: 80000}} // 10 bytes/ms
	last := func(writes int) []time.Duration {
		var out []time.Duration
		synctest.Test(t, func(t *testing.T) {
			c, srv := pipe(t, p)
			t0 := time.Now()
			go func() {
				b := make([]byte, 4*impair.SegmentSize/writes)
				for range writes {
					if _, err := srv.Write(b); err != nil {
						return
					}
				}
			}()
			for range 4 {
				_, at := readAt(t, c, impair.SegmentSize)
				out = append(out, at.Sub(t0))
			}
		})
		return out
	}
	one := last(1)
	assert.Equal(t, []time.Duration{
		149800 * time.Microsecond, 294600 * time.Microsecond, 439400 * time.Microsecond, 584200 * time.Microsecond,
	}, one, "each segment 144.8 ms behind the one before, then 5 ms")
	assert.Equal(t, one, last(4))
}

// TestWriteQueuesAtMostTheBuffer writes far more than the 4 MiB a
// connection queues, with the bytes held by the delay: the write takes
// what fits, then waits for room, until its deadline.
func TestWriteQueuesAtMostTheBuffer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, srv := pipe(t, impair.Profile{Up: impair.Link{Delay: time.Second}})
		t0 := time.Now()
		require.NoError(t, c.SetWriteDeadline(t0.Add(10*time.Millisecond)))
		n, err := c.Write(make([]byte, 8<<20))
		assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
		assert.Equal(t, 10*time.Millisecond, time.Since(t0))
		assert.InDelta(t, 4<<20, n, impair.SegmentSize, "a socket buffer's worth queued")
		_, at := readAt(t, srv, n)
		assert.Equal(t, time.Second, at.Sub(t0), "what was queued is sent")

		// Without a deadline, a huge write goes through in buffers.
		require.NoError(t, c.SetWriteDeadline(time.Time{}))
		done := make(chan error, 1)
		go func() {
			_, err := c.Write(make([]byte, 6<<20))
			done <- err
		}()
		_, err = io.ReadFull(srv, make([]byte, 6<<20))
		require.NoError(t, err)
		require.NoError(t, <-done)
	})
}

// halfPipe is a net.Pipe end that can be half-closed, as a *net.TCPConn
// can: CloseWrite records when it was called and ends the peer's reads.
type halfPipe struct {
	net.Conn
	closedAt chan time.Time
}

func (h *halfPipe) CloseWrite() error {
	h.closedAt <- time.Now()
	return h.Conn.Close()
}

func TestCloseWriteTakesTheDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, srv := net.Pipe()
		h := &halfPipe{Conn: a, closedAt: make(chan time.Time, 1)}
		c := impair.Profile{Up: impair.Link{Delay: 30 * time.Millisecond}}.Conn(h, 0)
		defer func() { _ = c.Close(); _ = srv.Close() }()
		cw := closeWriter(t, c)
		t0 := time.Now()
		_, err := c.Write([]byte("last words"))
		require.NoError(t, err)
		require.NoError(t, cw.CloseWrite())
		_, err = c.Write([]byte("more"))
		assert.ErrorIs(t, err, net.ErrClosed, "no write after CloseWrite")
		b, err := io.ReadAll(srv)
		require.NoError(t, err)
		assert.Equal(t, "last words", string(b), "the bytes before it are sent")
		assert.Equal(t, 30*time.Millisecond, (<-h.closedAt).Sub(t0), "the end of the stream takes the delay")
	})
	synctest.Test(t, func(t *testing.T) {
		c, _ := pipe(t, impair.Profile{Up: impair.Link{Delay: time.Millisecond}})
		assert.ErrorContains(t, closeWriter(t, c).CloseWrite(), "CloseWrite", "a net.Pipe cannot be half-closed")
	})
}

func TestCloseWriteOverLoopback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	got := make(chan string, 1)
	go func() {
		s, err := ln.Accept()
		if err != nil {
			got <- err.Error()
			return
		}
		defer s.Close()
		b, _ := io.ReadAll(s)
		_, _ = s.Write([]byte("ok"))
		got <- string(b)
	}()
	p := impair.Profile{Up: impair.Link{Delay: time.Millisecond}, Down: impair.Link{Delay: time.Millisecond}}
	c, err := p.Dialer(nil)(t.Context(), "tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte("request"))
	require.NoError(t, err)
	require.NoError(t, closeWriter(t, c).CloseWrite())
	b, err := io.ReadAll(c)
	require.NoError(t, err)
	assert.Equal(t, "ok", string(b), "the read side stays open")
	assert.Equal(t, "request", <-got)
}

// closeWriter returns c as a connection that can be half-closed.
func closeWriter(t *testing.T, c net.Conn) interface{ CloseWrite() error } {
	t.Helper()
	cw, ok := c.(interface{ CloseWrite() error })
	require.True(t, ok, "%T has no CloseWrite", c)
	return cw
}
