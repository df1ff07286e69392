package impair_test

import (
	"errors"
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

// pipe returns an impaired client end and the server end of an in-memory
// connection. Inside a synctest bubble its timing is exact.
func pipe(t *testing.T, p impair.Profile) (*impair.Conn, net.Conn) {
	t.Helper()
	a, b := net.Pipe()
	c := p.Conn(a, 0)
	t.Cleanup(func() { _ = c.Close(); _ = b.Close() })
	return c, b
}

// readAt reads exactly n bytes from r and returns them with the (bubble)
// time they were complete.
func readAt(t *testing.T, r io.Reader, n int) ([]byte, time.Time) {
	t.Helper()
	b := make([]byte, n)
	_, err := io.ReadFull(r, b)
	require.NoError(t, err)
	return b, time.Now()
}

func TestDelayEachDirection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := impair.Profile{Up: impair.Link{Delay: 10 * time.Millisecond}, Down: impair.Link{Delay: 25 * time.Millisecond}}
		c, srv := pipe(t, p)
		t0 := time.Now()
		go func() {
			b := make([]byte, 5)
			if _, err := io.ReadFull(srv, b); err != nil {
				return
			}
			_, _ = srv.Write(append(b, '!'))
		}()
		n, err := c.Write([]byte("hello"))
		require.NoError(t, err)
		assert.Equal(t, 5, n)
		assert.Equal(t, t0, time.Now(), "a write returns once queued")
		got, at := readAt(t, c, 6)
		assert.Equal(t, "hello!", string(got))
		assert.Equal(t, 35*time.Millisecond, at.Sub(t0), "10 ms up + 25 ms down")
	})
}

func TestRateSerializesBehindEarlierBytes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 8 kbit/s: 1000 bytes take 1 s on the link, then the 5 ms delay.
		p := impair.Profile{Up: impair.Link{Delay: 5 * time.Millisecond, Rate: 8000}}
		c, srv := pipe(t, p)
		t0 := time.Now()
		_, err := c.Write(make([]byte, 1000))
		require.NoError(t, err)
		_, err = c.Write(make([]byte, 500))
		require.NoError(t, err)
		_, at1 := readAt(t, srv, 1000)
		_, at2 := readAt(t, srv, 500)
		assert.Equal(t, 1005*time.Millisecond, at1.Sub(t0))
		assert.Equal(t, 1505*time.Millisecond, at2.Sub(t0), "the second write waits for the link")
	})
}

func TestLossDelaysTheWriteOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Every segment lost: 3000 bytes are 3 segments, recovered
		// together, one retransmission delay (50 ms) late.
		p := impair.Profile{Up: impair.Link{Delay: time.Millisecond, Loss: 1}, RetransmitDelay: 50 * time.Millisecond}
		c, srv := pipe(t, p)
		t0 := time.Now()
		_, err := c.Write(make([]byte, 3000))
		require.NoError(t, err)
		got, at := readAt(t, srv, 3000)
		assert.Len(t, got, 3000, "a loss delays bytes; none go missing")
		assert.Equal(t, 51*time.Millisecond, at.Sub(t0))
	})
}

// TestDrawsDoNotDependOnTheSplit sends the same 100 segments as one write
// and as 100 writes: the same segments are lost, so the last byte arrives
// at the same time.
func TestDrawsDoNotDependOnTheSplit(t *testing.T) {
	p := impair.Profile{Up: impair.Link{Delay: 5 * time.Millisecond, Loss: 0.05}, RetransmitDelay: 10 * time.Millisecond, Seed: 4}
	last := func(writes int) time.Duration {
		var d time.Duration
		synctest.Test(t, func(t *testing.T) {
			c, srv := pipe(t, p)
			t0 := time.Now()
			size := 100 * impair.SegmentSize / writes
			for range writes {
				_, err := c.Write(make([]byte, size))
				require.NoError(t, err)
			}
			_, at := readAt(t, srv, 100*impair.SegmentSize)
			d = at.Sub(t0)
		})
		return d
	}
	one, split := last(1), last(100)
	assert.Equal(t, 15*time.Millisecond, one, "at 5%% over 100 segments, this seed loses some")
	assert.Equal(t, one, split)
}

func TestJitterStaysInRangeAndInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := impair.Profile{Up: impair.Link{Delay: 20 * time.Millisecond, Jitter: 10 * time.Millisecond}, Seed: 3}
		c, srv := pipe(t, p)
		starts := make([]time.Time, 50)
		wait := receive(t, srv, 50)
		for i := range 50 {
			starts[i] = time.Now()
			_, err := c.Write([]byte{byte(i)})
			require.NoError(t, err)
			time.Sleep(time.Millisecond)
		}
		got := wait()
		distinct := map[time.Duration]bool{}
		for i, r := range got {
			require.Equal(t, byte(i), r.b, "bytes keep their order")
			d := r.at.Sub(starts[i])
			assert.GreaterOrEqual(t, d, 10*time.Millisecond)
			assert.LessOrEqual(t, d, 30*time.Millisecond, "an earlier byte, sent sooner, never holds one past its own bound")
			distinct[d] = true
		}
		assert.Greater(t, len(distinct), 10, "jitter varies the delay")
	})
}

type arrival struct {
	b  byte
	at time.Time
}

// receive starts reading n single bytes from r as they come, in the
// background, so that their times are the arrivals' and not the test's;
// the function it returns waits for them.
func receive(t *testing.T, r io.Reader, n int) func() []arrival {
	ch := make(chan []arrival, 1)
	go func() {
		var out []arrival
		b := make([]byte, 1)
		for range n {
			if _, err := io.ReadFull(r, b); err != nil {
				break
			}
			out = append(out, arrival{b[0], time.Now()})
		}
		ch <- out
	}()
	return func() []arrival {
		out := <-ch
		require.Len(t, out, n)
		return out
	}
}

// arrivals returns the delays of n one-byte writes, one per millisecond,
// through a connection with profile p and connection seed seed.
func arrivals(t *testing.T, p impair.Profile, seed uint64, n int) []time.Duration {
	var out []time.Duration
	synctest.Test(t, func(t *testing.T) {
		a, b := net.Pipe()
		c := p.Conn(a, seed)
		defer func() { _ = c.Close(); _ = b.Close() }()
		t0 := time.Now()
		wait := receive(t, b, n)
		for range n {
			_, err := c.Write([]byte{1})
			require.NoError(t, err)
			time.Sleep(time.Millisecond)
		}
		for _, r := range wait() {
			out = append(out, r.at.Sub(t0))
		}
	})
	return out
}

func TestSeedMakesDrawsRepeatable(t *testing.T) {
	p := impair.Profile{Up: impair.Link{Delay: 20 * time.Millisecond, Jitter: 15 * time.Millisecond, Loss: 0.2}, RetransmitDelay: 40 * time.Millisecond, Seed: 11}
	a := arrivals(t, p, 0, 30)
	b := arrivals(t, p, 0, 30)
	assert.Equal(t, a, b, "same seed, same connection: same draws")
	c := arrivals(t, p, 1, 30)
	assert.NotEqual(t, a, c, "another connection draws differently")
	p.Seed = 12
	d := arrivals(t, p, 0, 30)
	assert.NotEqual(t, a, d, "another seed draws differently")
}

func TestReadDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := impair.Profile{Down: impair.Link{Delay: 100 * time.Millisecond}}
		c, srv := pipe(t, p)
		go func() { _, _ = srv.Write([]byte("x")) }()
		t0 := time.Now()
		require.NoError(t, c.SetReadDeadline(t0.Add(30*time.Millisecond)))
		_, err := c.Read(make([]byte, 1))
		assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
		assert.Equal(t, 30*time.Millisecond, time.Since(t0), "the wait ends at the deadline")
		var ne net.Error
		require.ErrorAs(t, err, &ne)
		assert.True(t, ne.Timeout())

		// Clearing the deadline lets the byte arrive, on time.
		require.NoError(t, c.SetReadDeadline(time.Time{}))
		b, at := readAt(t, c, 1)
		assert.Equal(t, "x", string(b))
		assert.Equal(t, 100*time.Millisecond, at.Sub(t0))
	})
}

func TestDeadlineChangeWakesABlockedRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := pipe(t, impair.Profile{Down: impair.Link{Delay: time.Second}})
		t0 := time.Now()
		errc := make(chan error, 1)
		go func() {
			_, err := c.Read(make([]byte, 1))
			errc <- err
		}()
		time.Sleep(10 * time.Millisecond)
		require.NoError(t, c.SetReadDeadline(time.Now())) // as http.Transport does to abort a read
		assert.ErrorIs(t, <-errc, os.ErrDeadlineExceeded)
		assert.Equal(t, 10*time.Millisecond, time.Since(t0))
	})
}

func TestEndOfStreamTakesTheDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, srv := pipe(t, impair.Profile{Down: impair.Link{Delay: 40 * time.Millisecond}})
		t0 := time.Now()
		go func() {
			_, _ = srv.Write([]byte("bye"))
			_ = srv.Close()
		}()
		b, err := io.ReadAll(c)
		require.NoError(t, err)
		assert.Equal(t, "bye", string(b))
		assert.Equal(t, 40*time.Millisecond, time.Since(t0))
		_, err = c.Read(make([]byte, 1))
		assert.ErrorIs(t, err, io.EOF, "the end stays the end")
	})
	synctest.Test(t, func(t *testing.T) {
		c, srv := pipe(t, impair.Profile{Down: impair.Link{Delay: 40 * time.Millisecond}})
		t0 := time.Now()
		_ = srv.Close() // a close with nothing before it
		_, err := c.Read(make([]byte, 1))
		assert.ErrorIs(t, err, io.EOF)
		assert.Equal(t, 40*time.Millisecond, time.Since(t0))
	})
}

func TestCloseUnblocksAndEndsGoroutines(t *testing.T) {
	// synctest.Test fails if a goroutine of the bubble is left behind.
	synctest.Test(t, func(t *testing.T) {
		a, srv := net.Pipe()
		c := impair.Profile{Up: impair.Link{Delay: time.Hour}, Down: impair.Link{Delay: time.Hour}}.Conn(a, 0)
		go func() { _, _ = srv.Write([]byte("late")) }()
		_, err := c.Write([]byte("never sent"))
		require.NoError(t, err)
		errc := make(chan error, 1)
		go func() {
			_, err := c.Read(make([]byte, 4))
			errc <- err
		}()
		time.Sleep(time.Millisecond)
		require.NoError(t, c.Close())
		assert.ErrorIs(t, <-errc, net.ErrClosed)
		_, err = c.Write([]byte("x"))
		assert.ErrorIs(t, err, net.ErrClosed)
		assert.NoError(t, c.Close(), "a second Close is harmless")
		_ = srv.Close()
	})
}

func TestWriteBlocksWhenTheQueueIsFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, srv := pipe(t, impair.Profile{Up: impair.Link{Delay: 50 * time.Millisecond}})
		t0 := time.Now()
		big := make([]byte, 4<<20)
		_, err := c.Write(big) // fills the queue
		require.NoError(t, err)
		require.NoError(t, c.SetWriteDeadline(t0.Add(20*time.Millisecond)))
		_, err = c.Write([]byte("more"))
		assert.ErrorIs(t, err, os.ErrDeadlineExceeded, "no room before the deadline")
		assert.Equal(t, 20*time.Millisecond, time.Since(t0))

		require.NoError(t, c.SetWriteDeadline(time.Time{}))
		done := make(chan time.Time, 1)
		go func() {
			_, err := c.Write([]byte("more"))
			if err == nil {
				done <- time.Now()
			}
		}()
		_, at := readAt(t, srv, len(big)) // the queue drains at 50 ms
		assert.Equal(t, 50*time.Millisecond, at.Sub(t0))
		assert.Equal(t, 50*time.Millisecond, (<-done).Sub(t0), "the blocked write goes on once there is room")
		got, _ := readAt(t, srv, 4)
		assert.Equal(t, "more", string(got))
	})
}

func TestUnderlyingWriteErrorReachesTheWriter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, srv := pipe(t, impair.Profile{Up: impair.Link{Delay: time.Millisecond}})
		require.NoError(t, srv.Close())
		_, err := c.Write([]byte("x"))
		require.NoError(t, err, "queued before the failure is known")
		time.Sleep(2 * time.Millisecond)
		_, err = c.Write([]byte("y"))
		require.Error(t, err)
		assert.True(t, errors.Is(err, io.ErrClosedPipe), "got %v", err)
	})
}

func TestZeroProfileDialsUnimpaired(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	c, err := impair.Profile{Seed: 3}.Dialer(nil)(t.Context(), "tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	assert.IsType(t, &net.TCPConn{}, c)
	c2, err := impair.Profile{Up: impair.Link{Delay: time.Millisecond}}.Dialer(nil)(t.Context(), "tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c2.Close()
	assert.IsType(t, &impair.Conn{}, c2)
	assert.Equal(t, ln.Addr().String(), c2.RemoteAddr().String())
}
